//go:build !fast

package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testserver"
)

func TestTwoTokensSeeOnlyTheirOwnWork(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.InlineOutputBytes = 64
	cfg.Quotas.ConcurrentRuns = 1
	srv, b := testserver.Docker(t, cfg, server.Options{Tokens: teamTokens})
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	url, eng := srv.URL(), srv.Engine()
	alice, bob, ops := connectAs(t, url, "alice-s3cret"), connectAs(t, url, "bob-s3cret"), connectAs(t, url, "ops-s3cret")

	t.Run("no token is 401", func(t *testing.T) {
		if code := postRaw(t, url, "", initBody); code != http.StatusUnauthorized {
			t.Errorf("status %d", code)
		}
	})

	// Outputs and artifacts.
	var run engine.Result
	okTool(t, alice, "run_code", map[string]any{"language": "bash", "code": "seq 1 500; echo alice-file > out.txt"}, &run)
	if run.StdoutURI == "" || len(run.Artifacts) != 1 || run.Artifacts[0].URI == "" {
		t.Fatalf("want a truncated stdout and an artifact: %+v", run)
	}
	t.Run("outputs and artifacts", func(t *testing.T) {
		for _, uri := range []string{run.StdoutURI, run.Artifacts[0].URI} {
			if _, err := alice.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); err != nil {
				t.Errorf("alice reads her own %s: %v", uri, err)
			}
			missing := strings.Replace(uri, run.RunID, "0000000000000000", 1)
			want := readErr(t, bob, missing)
			if got := readErr(t, bob, uri); got != want {
				t.Errorf("bob reading alice's %s: %q, want the missing-resource answer %q", uri, got, want)
			}
			if got := readErr(t, ops, uri); got != want {
				t.Errorf("the operator reading alice's %s: %q, want %q", uri, got, want)
			}
		}
	})

	// Sessions and their files.
	var si sessions.Info
	okTool(t, alice, "create_session", map[string]any{"language": "bash"}, &si)
	var wf mcpserver.WriteFileOutput
	okTool(t, alice, "write_file", map[string]any{"session_id": si.SessionID, "path": "secret.txt", "content": "alice's secret"}, &wf)
	const noSession = "sess-0000000000000000"
	t.Run("sessions and files", func(t *testing.T) {
		id := si.SessionID
		sameAsMissing(t, "bob reads alice's file", bob, "read_file", map[string]any{"session_id": id, "path": "secret.txt"}, "session_id", noSession)
		sameAsMissing(t, "bob writes into alice's session", bob, "write_file", map[string]any{"session_id": id, "path": "secret.txt", "content": "bob"}, "session_id", noSession)
		sameAsMissing(t, "bob lists alice's files", bob, "list_files", map[string]any{"session_id": id}, "session_id", noSession)
		sameAsMissing(t, "bob runs code in alice's session", bob, "run_code", map[string]any{"session_id": id, "code": "cat secret.txt"}, "session_id", noSession)
		sameAsMissing(t, "bob closes alice's session", bob, "close_session", map[string]any{"session_id": id}, "session_id", noSession)
		sameAsMissing(t, "the operator reads alice's file", ops, "read_file", map[string]any{"session_id": id, "path": "secret.txt"}, "session_id", noSession)
		var list mcpserver.SessionList
		okTool(t, bob, "list_sessions", map[string]any{}, &list)
		if len(list.Sessions) != 0 {
			t.Errorf("bob lists %+v", list.Sessions)
		}
		okTool(t, alice, "list_sessions", map[string]any{}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].Owner != "" {
			t.Errorf("alice lists %+v, want her session without owners", list.Sessions)
		}
		okTool(t, ops, "list_sessions", map[string]any{}, &list)
		if len(list.Sessions) != 1 || list.Sessions[0].Owner != "alice" {
			t.Errorf("the operator lists %+v, want alice's session with its owner", list.Sessions)
		}
		var f sessions.File
		okTool(t, alice, "read_file", map[string]any{"session_id": id, "path": "secret.txt"}, &f)
		if f.Content != "alice's secret" {
			t.Errorf("alice's file after bob's attempts: %q", f.Content)
		}
		var closed sessions.Info
		okTool(t, ops, "close_session", map[string]any{"session_id": id}, &closed)
		if closed.Owner != "alice" {
			t.Errorf("the operator closed %+v", closed)
		}
	})

	// Executions, cancellation and quotas.
	var x executions.Snapshot
	okTool(t, alice, "start_execution", map[string]any{"language": "bash", "code": "echo started; sleep 300", "timeout_seconds": 600}, &x)
	const noExec = "exec-0000000000000000"
	t.Run("executions", func(t *testing.T) {
		sameAsMissing(t, "bob reads alice's execution", bob, "get_execution", map[string]any{"execution_id": x.ExecutionID}, "execution_id", noExec)
		sameAsMissing(t, "bob cancels alice's execution", bob, "cancel_execution", map[string]any{"execution_id": x.ExecutionID}, "execution_id", noExec)
		sameAsMissing(t, "the operator reads alice's execution", ops, "get_execution", map[string]any{"execution_id": x.ExecutionID}, "execution_id", noExec)
		var list mcpserver.ExecutionList
		okTool(t, bob, "list_executions", map[string]any{}, &list)
		if len(list.Executions) != 0 {
			t.Errorf("bob lists %+v", list.Executions)
		}
		okTool(t, ops, "list_executions", map[string]any{}, &list)
		if len(list.Executions) != 1 || list.Executions[0].Owner != "alice" {
			t.Errorf("the operator lists %+v", list.Executions)
		}
	})
	t.Run("quota", func(t *testing.T) {
		// Alice's one run slot is her execution's.
		res := callTool(t, alice, "run_code", map[string]any{"language": "bash", "code": "echo more"})
		if msg := toolText(res); !res.IsError || !strings.Contains(msg, "quota") || !strings.Contains(msg, "quotas.concurrent_runs") {
			t.Errorf("alice over her quota: isError %v: %s", res.IsError, msg)
		}
		var r engine.Result
		okTool(t, bob, "run_code", map[string]any{"language": "bash", "code": "echo bob"}, &r)
		if r.Status != engine.StatusOK || r.Stdout != "bob\n" {
			t.Errorf("bob's run while alice is at her quota: %+v", r)
		}
	})
	t.Run("the operator cancels alice's execution", func(t *testing.T) {
		var c executions.Snapshot
		okTool(t, ops, "cancel_execution", map[string]any{"execution_id": x.ExecutionID}, &c)
		if c.Status != executions.StatusCancelled || c.Owner != "alice" || c.Result != nil || strings.Contains(c.Stdout, "started") {
			t.Errorf("cancelled: %+v", c)
		}
	})

	t.Run("bob's notifications/cancelled do not stop alice's call", func(t *testing.T) {
		done := make(chan *mcp.CallToolResult, 1)
		go func() {
			res, _ := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
				"language": "bash", "code": "sleep 2; echo finished"}})
			done <- res
		}()
		waitRunOf(t, eng, "alice")
		cancelAll(t, url, "bob-s3cret")
		res := <-done
		var r engine.Result
		data, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(data, &r)
		if res.IsError || r.Status != engine.StatusOK || r.Stdout != "finished\n" {
			t.Errorf("alice's run after bob's cancellations: %s", toolText(res))
		}
	})
	t.Run("alice's own notifications/cancelled stop her call", func(t *testing.T) {
		// The server sends no answer to a cancelled call, as the protocol
		// says; the client stops waiting once the run is gone.
		ctx, stopWaiting := context.WithCancel(context.Background())
		defer stopWaiting()
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = alice.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
				"language": "bash", "code": "sleep 120; echo finished"}})
		}()
		waitRunOf(t, eng, "alice")
		start := time.Now()
		cancelAll(t, url, "alice-s3cret")
		if !testutil.WaitFor(30*time.Second, func() bool { return !hasRunOf(eng, "alice") }) {
			t.Errorf("alice's run still in flight %s after her cancellation", time.Since(start))
		}
		stopWaiting()
		<-done
	})
}

func hasRunOf(eng *engine.Engine, owner string) bool {
	for _, r := range eng.Inflight() {
		if r.Owner == owner {
			return true
		}
	}
	return false
}

// waitRunOf waits until owner has a run in flight.
func waitRunOf(t *testing.T, eng *engine.Engine, owner string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, func() bool { return hasRunOf(eng, owner) }, "a run of "+owner+" in flight")
}
