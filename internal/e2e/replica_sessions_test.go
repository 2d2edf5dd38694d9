//go:build !fast

package e2e

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestASessionAnswersThroughEitherReplicaAndOutlivesItsReplica: two
// servers (real binaries, real Docker) share a real etcd. Alice's Python
// session, made through one, runs her cells, takes and gives her files,
// is listed, forked, paused and closed through the other (which forwards
// to the one holding it, streaming the run's output as progress); bob
// cannot use it through either. When the replica holding a second session is killed
// (SIGKILL), the one left re-attaches to its sandbox once the dead one's
// heartbeat expires, and the session keeps its variables and files: in the
// same container (its hostname), with a random number drawn before the
// kill, which a replay into a new sandbox would draw again, and no resumed
// in the result.
func TestASessionAnswersThroughEitherReplicaAndOutlivesItsReplica(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	// The take-over is polled for: no rate limit in the way.
	flags := append(replicaFlags(etcd.Endpoint), "--backend", "docker", "--http-rate-per-minute", "100000")
	one := serveOn(t, t.TempDir(), flags...)
	other := serveOn(t, t.TempDir(), flags...)
	aliceOne, aliceOther := connectAs(t, one.url, restartAlice), connectAs(t, other.url, restartAlice)
	bobOne, bobOther := connectAs(t, one.url, restartBob), connectAs(t, other.url, restartBob)

	var s sessions.Info
	call(t, aliceOne, "create_session", map[string]any{"language": "python"}, &s)
	var res engine.Result
	call(t, aliceOne, "run_code", map[string]any{"language": "python", "session_id": s.SessionID, "code": "x = 41"}, &res)

	// Through the other replica: a cell sees x.
	call(t, aliceOther, "run_code", map[string]any{"language": "python", "session_id": s.SessionID, "code": "print(x + 1)"}, &res)
	if strings.TrimSpace(res.Stdout) != "42" {
		t.Fatalf("a cell through the other replica: %+v", res)
	}
	call(t, aliceOther, "write_file", map[string]any{"session_id": s.SessionID, "path": "note.txt", "content": "from the other replica"}, &struct{}{})
	call(t, aliceOne, "run_code", map[string]any{"language": "python", "session_id": s.SessionID, "code": "print(open('note.txt').read())"}, &res)
	if strings.TrimSpace(res.Stdout) != "from the other replica" {
		t.Errorf("a file written through the other replica, read through the one holding the session: %+v", res)
	}
	var file sessions.File
	call(t, aliceOther, "read_file", map[string]any{"session_id": s.SessionID, "path": "note.txt"}, &file)
	if file.Content != "from the other replica" {
		t.Errorf("read_file through the other replica: %+v", file)
	}
	var listed struct {
		Sessions []sessions.Info `json:"sessions"`
	}
	call(t, aliceOther, "list_sessions", map[string]any{}, &listed)
	if len(listed.Sessions) != 1 || listed.Sessions[0].SessionID != s.SessionID {
		t.Errorf("list_sessions through the other replica: %+v", listed)
	}
	for name, bob := range map[string]*mcp.ClientSession{"the replica holding it": bobOne, "the other replica": bobOther} {
		got, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "session_id": s.SessionID, "code": "print(x)"}})
		if err == nil && !got.IsError {
			t.Errorf("bob runs code in alice's session through %s: %s", name, textOf(got))
		}
		call(t, bob, "list_sessions", map[string]any{}, &listed)
		if len(listed.Sessions) != 0 {
			t.Errorf("bob lists alice's session through %s: %+v", name, listed)
		}
	}
	// Fork and pause through the other replica: the one holding the
	// session does both, and the original keeps its state.
	var fork sessions.ForkResult
	call(t, aliceOther, "fork_session", map[string]any{"session_id": s.SessionID}, &fork)
	call(t, aliceOther, "run_code", map[string]any{"language": "python", "session_id": fork.Session.SessionID, "code": "x += 100\nprint(x)"}, &res)
	if strings.TrimSpace(res.Stdout) != "141" {
		t.Errorf("a cell in the fork made through the other replica: %+v", res)
	}
	var paused sessions.PauseResult
	call(t, aliceOther, "pause_session", map[string]any{"session_id": s.SessionID}, &paused)
	if paused.SessionID != s.SessionID {
		t.Errorf("pause_session through the other replica: %+v", paused)
	}
	call(t, aliceOne, "run_code", map[string]any{"language": "python", "session_id": s.SessionID, "code": "print(x)"}, &res)
	if strings.TrimSpace(res.Stdout) != "41" {
		t.Errorf("the original, paused through the other replica and resumed: %+v", res)
	}
	call(t, aliceOther, "close_session", map[string]any{"session_id": fork.Session.SessionID}, &struct{}{})
	call(t, aliceOther, "close_session", map[string]any{"session_id": s.SessionID}, &s)
	got, err := aliceOne.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "session_id": s.SessionID, "code": "print(x)"}})
	if err == nil && !got.IsError {
		t.Errorf("the session closed through the other replica still runs: %s", textOf(got))
	}

	// The replica holding a session dies; the one left takes it over.
	call(t, aliceOne, "create_session", map[string]any{"language": "python"}, &s)
	var first engine.Result
	call(t, aliceOne, "run_code", map[string]any{"language": "python", "session_id": s.SessionID,
		"code": "import random, socket\ny = 6 * 7\nnonce = random.random()\nopen('kept.txt', 'w').write('kept')\nprint(socket.gethostname(), nonce)"}, &first)
	sandboxAndNonce := strings.TrimSpace(first.Stdout)
	pid := one.cmd.Process.Pid
	if host := strings.Fields(sandboxAndNonce + " ")[0]; !slices.Contains(containersOf(t, cli, pid), host) {
		t.Fatalf("the session's sandbox %q is not one of its replica's containers %v", host, containersOf(t, cli, pid))
	}
	_ = one.cmd.Process.Kill()
	_ = one.cmd.Wait()
	var takenOver *mcp.CallToolResult
	waitFor(t, "the session to answer through the replica left", 90*time.Second, func() bool {
		got, err := aliceOther.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "session_id": s.SessionID,
			"code": "import socket\nprint(y, open('kept.txt').read(), socket.gethostname(), nonce)"}})
		if err != nil || got.IsError {
			return false
		}
		takenOver = got
		return true
	})
	data, _ := json.Marshal(takenOver.StructuredContent)
	var after engine.Result // fresh: a field absent from the answer stays unset
	if err := json.Unmarshal(data, &after); err != nil {
		t.Fatal(err)
	}
	if want := "42 kept " + sandboxAndNonce; strings.TrimSpace(after.Stdout) != want {
		t.Errorf("the session taken over: stdout %q, want %q (its state, in the same sandbox, by the same interpreter)", after.Stdout, want)
	}
	if after.Resumed != nil {
		t.Errorf("the session taken over was rebuilt (%+v), not re-attached to", after.Resumed)
	}
	call(t, aliceOther, "close_session", map[string]any{"session_id": s.SessionID}, &s)
	waitFor(t, "the sessions' containers removed", 60*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}
