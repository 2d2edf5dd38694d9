//go:build linux && !fast

package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// requireCrun skips where the crun backend cannot serve, or under CI=true
// (whose machines run crun as root) fails, as the crun package's tests do.
func requireCrun(t *testing.T) {
	t.Helper()
	testutil.RequireDocker(t)
	why := crun.Refusal(config.Default(), runtime.GOOS, os.Geteuid(), os.Getenv("DOCKER_HOST"))
	if _, err := exec.LookPath("crun"); why == "" && err != nil {
		why = "crun is not installed"
	}
	if why != "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the crun backend is required under CI=true: %s", why)
		}
		t.Skipf("crun backend unavailable: %s", why)
	}
}

// TestRestartOnCrunKeepsASessionsFilesAndInterpreterState: kill -9 of a
// server on the crun backend (the default on a root Linux host), then a new
// one on the same data directory: alice's Python and JavaScript sessions
// answer by the same ids, in the same sandboxes (re-attached, not
// replayed), with their files and their interpreters' variables; closing
// them removes their sandboxes.
func TestRestartOnCrunKeepsASessionsFilesAndInterpreterState(t *testing.T) {
	requireCrun(t)
	for _, lang := range []string{"python", "javascript"} {
		testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), lang)
	}
	dataDir := t.TempDir()
	flags := []string{"--backend", "crun", "--pool-size", "0", "--sweep-interval-seconds", "2",
		"--http-auth-tokens", "alice=" + restartAlice + ",bob=" + restartBob}
	first := serveOn(t, dataDir, flags...)
	alice := connectAs(t, first.url, restartAlice)

	type session struct {
		SessionID string `json:"session_id"`
		SandboxID string `json:"sandbox_id"`
	}
	programs := map[string][2]string{
		"python":     {"x = 41\nopen('kept.txt', 'w').write('kept')", "print(x + 1, open('kept.txt').read())"},
		"javascript": {"var x = 41; require('fs').writeFileSync('kept.txt', 'kept')", "console.log(x + 1, require('fs').readFileSync('kept.txt', 'utf8'))"},
	}
	ids := map[string]string{}
	for lang, p := range programs {
		var s session
		call(t, alice, "create_session", map[string]any{"language": lang}, &s)
		ids[lang] = s.SessionID
		var res engine.Result
		call(t, alice, "run_code", map[string]any{"language": lang, "session_id": s.SessionID, "code": p[0]}, &res)
		if res.Status != engine.StatusOK {
			t.Fatalf("%s: the first cell: %+v", lang, res)
		}
	}
	// A session's sandbox is one of the server's with an agent socket
	// directory (its pool's and one-shot sandboxes have none).
	bundles := filepath.Join(crun.DefaultStateDir, "bundles")
	socketDir := func(id string) string {
		return filepath.Join("/run/mcr-crun-agent", id[strings.LastIndexByte(id, '-')+1:])
	}
	own := func(pid int) []string {
		entries, _ := os.ReadDir(bundles)
		var left []string
		for _, e := range entries {
			if _, err := os.Stat(socketDir(e.Name())); err == nil && strings.HasPrefix(e.Name(), "mcr-"+strconv.Itoa(pid)+"-") {
				left = append(left, e.Name())
			}
		}
		return left
	}
	pid := first.cmd.Process.Pid
	before := own(pid)
	if len(before) != 2 {
		t.Fatalf("the first server's sandboxes: %v, want its two sessions'", before)
	}
	_ = first.cmd.Process.Kill()
	_ = first.cmd.Wait()

	next := serveOn(t, dataDir, flags...)
	alice = connectAs(t, next.url, restartAlice)
	bob := connectAs(t, next.url, restartBob)
	for lang, p := range programs {
		var res engine.Result
		call(t, alice, "run_code", map[string]any{"language": lang, "session_id": ids[lang], "code": p[1]}, &res)
		if res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != "42 kept" {
			t.Errorf("%s: the session after the restart: %+v", lang, res)
		}
		if res.Resumed != nil {
			t.Errorf("%s: the session was rebuilt (%+v), not re-attached to", lang, res.Resumed)
		}
		got, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "session_id": ids[lang], "code": p[1]}})
		if err == nil && !got.IsError {
			t.Errorf("%s: bob runs code in alice's session after the restart: %s", lang, textOf(got))
		}
	}
	// Two sweeps of the new server have passed by now at most: its
	// sessions' sandboxes, which the old server's names still carry, stay.
	if after := own(pid); len(after) != 2 {
		t.Errorf("the sessions' sandboxes after the restart: %v, want %v", after, before)
	}
	for lang := range programs {
		var closed session
		call(t, alice, "close_session", map[string]any{"session_id": ids[lang]}, &closed)
	}
	waitFor(t, "the sessions' sandboxes removed", 60*time.Second, func() bool {
		for _, b := range before {
			if _, err := os.Stat(filepath.Join(bundles, b)); !os.IsNotExist(err) {
				return false
			}
			if _, err := os.Stat(socketDir(b)); !os.IsNotExist(err) {
				return false
			}
		}
		return true
	})
}
