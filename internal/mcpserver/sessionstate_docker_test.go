//go:build !fast

package mcpserver_test

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testserver"
)

// eras are the protocol versions whose clients the server answers: the
// last one of the initialize handshake and the first stateless one.
var eras = []string{"2025-11-25", "2026-07-28"}

// connectEra connects the SDK's Streamable HTTP client to url with token,
// asking for protocol version era, and checks that era is the one agreed.
func connectEra(t *testing.T, url, token, era string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "session-state-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearer{token}},
	}, &mcp.ClientSessionOptions{ProtocolVersion: era})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != era {
		t.Fatalf("asked for protocol %s, agreed on %s", era, got)
	}
	return cs
}

// sessionStateServer is a whole server of alice's and bob's whose paused
// sessions' files are kept under dataDir; it returns its MCP endpoint.
func sessionStateServer(t *testing.T) (url string, sess *sessions.Manager, cli *client.Client, dataDir string) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	srv, b := testserver.Docker(t, cfg, server.Options{Tokens: teamTokens})
	for _, lang := range []string{"python", "javascript"} {
		testutil.RequireImage(t, b, languages.Builtin(), lang)
	}
	return srv.URL(), srv.Sessions(), b.Client(), cfg.DataDir
}

// containerExists says whether Docker still has the container id.
func containerExists(t *testing.T, cli *client.Client, id string) bool {
	t.Helper()
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("id", id),
	})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	return len(list.Items) > 0
}

// cell runs code in a session over MCP; it must succeed.
func cell(t *testing.T, cs *mcp.ClientSession, lang, id, code string) engine.Result {
	t.Helper()
	var r engine.Result
	okTool(t, cs, "run_code", map[string]any{"language": lang, "session_id": id, "code": code}, &r)
	if r.Status != engine.StatusOK {
		t.Fatalf("%q in session %s: %s %s", code, id, r.Status, r.Stderr)
	}
	return r
}

// TestForkSessionOverMCP is the measure of a fork, through the
// SDK's client in both protocol eras: a list of a million built in the
// original, grown in the fork only, in Python and in JavaScript.
func TestForkSessionOverMCP(t *testing.T) {
	url, _, _, _ := sessionStateServer(t)
	langs := []struct {
		lang, build, grow, length string
		mode                      string
		replayed                  int
	}{
		{"python", "x = [i for i in range(10**6)]", "x.append(1)", "len(x)", sessions.ModeForked, 0},
		{"javascript", "let x = Array.from({length: 10**6}, (_, i) => i)", "x.push(1)", "x.length", sessions.ModeReplayed, 1},
	}
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			alice, bob := connectEra(t, url, "alice-s3cret", era), connectEra(t, url, "bob-s3cret", era)
			for _, c := range langs {
				t.Run(c.lang, func(t *testing.T) {
					var orig sessions.Info
					okTool(t, alice, "create_session", map[string]any{"language": c.lang}, &orig)
					cell(t, alice, c.lang, orig.SessionID, c.build)
					var fork sessions.ForkResult
					okTool(t, alice, "fork_session", map[string]any{"session_id": orig.SessionID}, &fork)
					if fork.Mode != c.mode || fork.CellsReplayed != c.replayed || fork.ForkedFrom != orig.SessionID ||
						fork.Session.SessionID == orig.SessionID || fork.Session.Language != c.lang {
						t.Fatalf("fork result %+v", fork)
					}
					id := fork.Session.SessionID
					cell(t, alice, c.lang, id, c.grow)
					if r := cell(t, alice, c.lang, id, c.length); r.Value != "1000001" {
						t.Errorf("the fork's length is %q, want 1000001", r.Value)
					}
					if r := cell(t, alice, c.lang, orig.SessionID, c.length); r.Value != "1000000" {
						t.Errorf("the original's length is %q after the fork grew, want 1000000", r.Value)
					}
					sameAsMissing(t, "bob forks alice's session", bob, "fork_session", map[string]any{"session_id": orig.SessionID}, "session_id", noSessionID)
					var list mcpserver.SessionList
					okTool(t, bob, "list_sessions", map[string]any{}, &list)
					if len(list.Sessions) != 0 {
						t.Errorf("bob lists %+v after trying to fork alice's session", list.Sessions)
					}
					for _, s := range []string{orig.SessionID, id} {
						okTool(t, alice, "close_session", map[string]any{"session_id": s}, &sessions.Info{})
					}
				})
			}
		})
	}
}

const noSessionID = "sess-0000000000000000"

// TestPauseSessionOverMCP pauses a session through the SDK's client in
// both protocol eras: its sandbox is gone from Docker, only its owner can
// pause or resume it, and its next call resumes it with its state and
// says so.
func TestPauseSessionOverMCP(t *testing.T) {
	url, sess, cli, dataDir := sessionStateServer(t)
	for _, era := range eras {
		t.Run(era, func(t *testing.T) {
			alice, bob := connectEra(t, url, "alice-s3cret", era), connectEra(t, url, "bob-s3cret", era)
			var si sessions.Info
			okTool(t, alice, "create_session", map[string]any{"language": "python"}, &si)
			id := si.SessionID
			cell(t, alice, "python", id, "x = [i for i in range(10**6)]")
			okTool(t, alice, "write_file", map[string]any{"session_id": id, "path": "notes.txt", "content": "kept"}, &mcpserver.WriteFileOutput{})
			sb := sess.SandboxOf(id)
			if sb == "" || !containerExists(t, cli, sb) {
				t.Fatalf("the live session's sandbox %q is not a container", sb)
			}

			sameAsMissing(t, "bob pauses alice's session", bob, "pause_session", map[string]any{"session_id": id}, "session_id", noSessionID)
			var p sessions.PauseResult
			okTool(t, alice, "pause_session", map[string]any{"session_id": id}, &p)
			if p.SessionID != id || p.Mode != sessions.ModeReplayed || p.FilesKept != 1 || p.CellsToRun != 1 || p.AlreadyWas {
				t.Fatalf("pause result %+v", p)
			}
			testutil.Eventually(t, 30*time.Second, func() bool { return !containerExists(t, cli, sb) }, "the paused session's container removed")
			if fi, err := os.Stat(filepath.Join(dataDir, "paused-sessions", id+".tar")); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the paused session's kept files: %v, %v", fi, err)
			}
			okTool(t, alice, "pause_session", map[string]any{"session_id": id}, &p)
			if !p.AlreadyWas {
				t.Errorf("pausing a paused session again: %+v", p)
			}

			// Bob's calls neither see nor wake alice's paused session.
			sameAsMissing(t, "bob resumes alice's session", bob, "run_code", map[string]any{"language": "python", "session_id": id, "code": "len(x)"}, "session_id", noSessionID)
			sameAsMissing(t, "bob forks alice's paused session", bob, "fork_session", map[string]any{"session_id": id}, "session_id", noSessionID)
			sameAsMissing(t, "bob reads alice's paused session's file", bob, "read_file", map[string]any{"session_id": id, "path": "notes.txt"}, "session_id", noSessionID)
			var list mcpserver.SessionList
			okTool(t, alice, "list_sessions", map[string]any{}, &list)
			if len(list.Sessions) != 1 || !list.Sessions[0].Paused {
				t.Fatalf("alice lists %+v after bob's calls, want her session still paused", list.Sessions)
			}

			r := cell(t, alice, "python", id, "len(x), open('notes.txt').read()")
			if r.Value != "(1000000, 'kept')" {
				t.Errorf("the resumed session's state: %q", r.Value)
			}
			if r.Resumed == nil || r.Resumed.Mode != sessions.ModeReplayed || r.Resumed.CellsReplayed != 1 || r.Resumed.FilesRestored != 1 || r.Resumed.DurationMs <= 0 {
				t.Errorf("the first call after the pause says it resumed %+v", r.Resumed)
			}
			if r := cell(t, alice, "python", id, "len(x)"); r.Resumed != nil || r.Value != "1000000" {
				t.Errorf("the second call after the pause: value %q, resumed %+v", r.Value, r.Resumed)
			}
			if nsb := sess.SandboxOf(id); nsb == "" || nsb == sb || !containerExists(t, cli, nsb) {
				t.Errorf("the resumed session's sandbox %q (it had %q)", nsb, sb)
			}
			okTool(t, alice, "close_session", map[string]any{"session_id": id}, &sessions.Info{})
		})
	}
}
