//go:build !fast

package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestRestartKeepsASessionsFilesAndInterpreterState: kill -9 of the
// server (Docker backend, which re-attaches), then a new one on the same
// data directory: alice's Python and JavaScript sessions answer by the same
// ids with their files and their interpreters' variables; bob cannot use
// them; closing them removes their containers, and nothing is left.
func TestRestartKeepsASessionsFilesAndInterpreterState(t *testing.T) {
	cli := testutil.RequireDocker(t)
	for _, lang := range []string{"python", "javascript"} {
		testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), lang)
	}
	dataDir := t.TempDir()
	flags := []string{"--backend", "docker", "--pool-size", "0", "--sweep-interval-seconds", "2",
		"--http-auth-tokens", "alice=" + restartAlice + ",bob=" + restartBob}
	first := serveOn(t, dataDir, flags...)
	alice := connectAs(t, first.url, restartAlice)

	type session struct {
		SessionID string `json:"session_id"`
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
	pid := first.cmd.Process.Pid
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
		got, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "session_id": ids[lang], "code": p[1]}})
		if err == nil && !got.IsError {
			t.Errorf("%s: bob runs code in alice's session after the restart: %s", lang, textOf(got))
		}
		var closed session
		call(t, alice, "close_session", map[string]any{"session_id": ids[lang]}, &closed)
	}
	// The sessions' containers carry the first server's labels.
	waitFor(t, "the sessions' containers removed", 60*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}
