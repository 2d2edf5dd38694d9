package tasks_test

import (
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testserver"
)

// twoTaskServers starts two whole servers on one state store
// (store.Memory) and one backend, as two replicas sharing a store: each its
// own engine, executions, tasks and HTTP listener. It returns their MCP
// endpoints.
func twoTaskServers(t *testing.T) (string, string, *fake.Backend) {
	t.Helper()
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	// No warm pool: the test waits for its runs' sandboxes to go. No rate
	// limit: a test calls faster than a client would.
	cfg.Pool.Size, cfg.Pool.Sizes = 0, nil
	cfg.HTTP.RatePerMinute = 0
	b := testutil.FakeBackend(t)
	st := store.NewMemory()
	var urls []string
	for _, replica := range []string{"a", "b"} {
		srv := testserver.Start(t, server.Parts{Config: cfg, Backend: b, Store: st, Replica: replica}, server.Options{Tokens: teamTokens})
		urls = append(urls, srv.URL())
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
