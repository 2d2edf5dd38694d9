//go:build !fast

package e2e

import (
	"context"
	"slices"
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
// ids, in the same containers (re-attached, not replayed: no resumed in
// the result, the sandbox's hostname unchanged, and a random number drawn
// before the kill, which a replay would draw again), with their files and
// their interpreters' variables; bob cannot use them; closing them removes
// their containers, and nothing is left.
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
	// The first cell prints the sandbox's hostname (its container's short
	// id) and a random number; the second prints both again.
	programs := map[string][2]string{
		"python": {"import random, socket\nx = 41\nnonce = random.random()\nopen('kept.txt', 'w').write('kept')\nprint(socket.gethostname(), nonce)",
			"import socket\nprint(x + 1, open('kept.txt').read(), socket.gethostname(), nonce)"},
		"javascript": {"var x = 41; var nonce = Math.random(); require('fs').writeFileSync('kept.txt', 'kept'); console.log(require('os').hostname(), nonce)",
			"console.log(x + 1, require('fs').readFileSync('kept.txt', 'utf8'), require('os').hostname(), nonce)"},
	}
	ids, before := map[string]string{}, map[string]string{}
	for lang, p := range programs {
		var s session
		call(t, alice, "create_session", map[string]any{"language": lang}, &s)
		ids[lang] = s.SessionID
		var res engine.Result
		call(t, alice, "run_code", map[string]any{"language": lang, "session_id": s.SessionID, "code": p[0]}, &res)
		if res.Status != engine.StatusOK || len(strings.Fields(res.Stdout)) != 2 {
			t.Fatalf("%s: the first cell: %+v", lang, res)
		}
		before[lang] = strings.TrimSpace(res.Stdout)
	}
	pid := first.cmd.Process.Pid
	// A session's hostname is its container's short id: one of the first
	// server's containers.
	hosts := map[string]string{}
	for lang := range programs {
		hosts[lang] = strings.Fields(before[lang])[0]
		if !slices.Contains(containersOf(t, cli, pid), hosts[lang]) {
			t.Fatalf("%s: the session's sandbox %s is not one of the first server's containers %v", lang, hosts[lang], containersOf(t, cli, pid))
		}
	}
	_ = first.cmd.Process.Kill()
	_ = first.cmd.Wait()

	next := serveOn(t, dataDir, flags...)
	alice = connectAs(t, next.url, restartAlice)
	bob := connectAs(t, next.url, restartBob)
	for lang, p := range programs {
		var res engine.Result
		call(t, alice, "run_code", map[string]any{"language": lang, "session_id": ids[lang], "code": p[1]}, &res)
		if want := "42 kept " + before[lang]; res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != want {
			t.Errorf("%s: the session after the restart: %+v, want stdout %q (the same sandbox, the same interpreter)", lang, res, want)
		}
		if res.Resumed != nil {
			t.Errorf("%s: the session was rebuilt (%+v), not re-attached to", lang, res.Resumed)
		}
		got, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "session_id": ids[lang], "code": p[1]}})
		if err == nil && !got.IsError {
			t.Errorf("%s: bob runs code in alice's session after the restart: %s", lang, textOf(got))
		}
	}
	// Two sweeps of the new server have passed by now at most: the
	// sessions' containers, which carry the first server's labels, stay.
	for lang, host := range hosts {
		if !slices.Contains(containersOf(t, cli, pid), host) {
			t.Errorf("%s: the session's container %s is gone after the restart", lang, host)
		}
	}
	for lang := range programs {
		var closed session
		call(t, alice, "close_session", map[string]any{"session_id": ids[lang]}, &closed)
	}
	// The sessions' containers carry the first server's labels.
	waitFor(t, "the sessions' containers removed", 60*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}
