package tasks_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// twoTaskServers serves two servers on one engine's state store
// (store.Memory), as two replicas sharing a store: each its own
// executions, tasks and HTTP handler.
func twoTaskServers(t *testing.T) (string, string, *fake.Backend) {
	t.Helper()
	cfg := config.Default()
	eng, b := testutil.FakeEngine(t, &cfg)
	var urls []string
	for _, replica := range []string{"a", "b"} {
		execs := executions.NewManager(eng, executions.WithReplica(replica))
		sess := sessions.NewManager(eng)
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			execs.Shutdown(ctx)
			sess.Shutdown()
		})
		server := mcpserver.NewServer(mcpserver.Deps{Engine: eng, Executions: execs, Sessions: sess}, "test", nil)
		srv := httptest.NewServer(transport.HTTPHandler(server, transport.HTTPOptions{MaxBodyBytes: 1 << 20, Tokens: teamTokens}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	return urls[0], urls[1], b
}

func TestATaskMadeOnOneServerIsReadAndCancelledOnAnother(t *testing.T) {
	here, there, b := twoTaskServers(t)
	alice, bob := teamTokens[0].Value, teamTokens[1].Value
	const era = "2025-11-25"
	created := rpc(t, here, alice, era, false, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash", "code": `echo done`},
		"task": map[string]any{"ttl": 60000},
	}).ok(t, "task-augmented tools/call")
	id, _ := created["task"].(map[string]any)["taskId"].(string)
	// Durable before the answer: the other server finds it at once.
	got := rpc(t, there, alice, era, false, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get on the other server")
	if got["taskId"] != id {
		t.Fatalf("tasks/get on the other server: %v", got)
	}
	res := rpc(t, there, alice, era, false, "tasks/result", map[string]any{"taskId": id}).ok(t, "tasks/result on the other server")
	if sc, _ := res["structuredContent"].(map[string]any); sc == nil || sc["stdout"] != "done\n" {
		t.Fatalf("tasks/result on the other server: %v", res)
	}
	rpc(t, there, bob, era, false, "tasks/get", map[string]any{"taskId": id}).fails(t, "bob's tasks/get on the other server", -32602, "unknown task id")
	if bl := rpc(t, there, bob, era, false, "tasks/list", nil).ok(t, "bob's tasks/list"); len(bl["tasks"].([]any)) != 0 {
		t.Errorf("bob lists alice's task on the other server: %v", bl)
	}
	if al := rpc(t, there, alice, era, false, "tasks/list", nil).ok(t, "alice's tasks/list"); len(al["tasks"].([]any)) != 1 {
		t.Errorf("alice's tasks on the other server: %v", al)
	}

	// A running task cancelled through the other server.
	created = rpc(t, here, alice, era, false, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash", "code": waitingProgram},
		"task": map[string]any{"ttl": 60000},
	}).ok(t, "a waiting task")
	id, _ = created["task"].(map[string]any)["taskId"].(string)
	cancelled := rpc(t, there, alice, era, false, "tasks/cancel", map[string]any{"taskId": id}).ok(t, "tasks/cancel on the other server")
	if cancelled["status"] != "cancelled" {
		t.Fatalf("tasks/cancel on the other server: %v", cancelled)
	}
	waitNoSandbox(t, b)
	for _, url := range []string{here, there} {
		if got := rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get after the cancel"); got["status"] != "cancelled" {
			t.Errorf("the task after a cancel through the other server: %v", got)
		}
	}
}
