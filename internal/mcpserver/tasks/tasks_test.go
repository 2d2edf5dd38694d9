package tasks_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testserver"
)

// teamTokens are the tokens of the tasks' owners: two users.
var teamTokens = []config.Token{
	{Name: "alice", Value: "alice-s3cret"},
	{Name: "bob", Value: "bob-s3cret"},
}

// taskServer is a whole server (internal/server) on the fake backend (the
// real agent in this process, real processes for the runs), with alice's
// and bob's tokens; it returns its MCP endpoint.
func taskServer(t *testing.T, mutate func(*config.Config)) (string, *fake.Backend) {
	t.Helper()
	url, b, _ := taskServerEngine(t, mutate)
	return url, b
}

// taskServerEngine is taskServer with the engine it serves.
func taskServerEngine(t *testing.T, mutate func(*config.Config)) (string, *fake.Backend, *engine.Engine) {
	t.Helper()
	cfg := config.Default()
	if mutate != nil {
		mutate(&cfg)
	}
	testutil.Unhurried(&cfg)
	// No warm pool: the tests count the sandboxes their runs make. No rate
	// limit: a test calls faster than a client would.
	cfg.Pool.Size, cfg.Pool.Sizes = 0, nil
	cfg.HTTP.RatePerMinute = 0
	b := testutil.FakeBackend(t)
	srv := testserver.Start(t, server.Parts{Config: cfg, Backend: b}, server.Options{Tokens: teamTokens})
	return srv.URL(), b, srv.Engine()
}

// rpcReply is one JSON-RPC answer, with the notifications sent on its stream.
type rpcReply struct {
	Result        map[string]any
	Error         *jsonrpc.Error
	Notifications []map[string]any
}

var rpcIDs atomic.Int64

// rpc posts one request as a client of era ("2025-11-25", or "2026-07-28"
// with or without the Tasks extension declared) and reads its answer.
func rpc(t *testing.T, url, token, era string, declareTasks bool, method string, params map[string]any) rpcReply {
	t.Helper()
	return rpcWithHeaders(t, url, token, era, declareTasks, method, params, nil)
}

// rpcWithHeaders is rpc with HTTP headers of the caller's.
func rpcWithHeaders(t *testing.T, url, token, era string, declareTasks bool, method string, params map[string]any, headers map[string]string) rpcReply {
	t.Helper()
	r, err := rpcStream(url, token, era, declareTasks, method, params, headers, nil)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// rpcStream posts one request and reads its answer, calling onNote with
// each notification sent on its stream before the answer. It fails with an
// error, not the test, so that it can run on a goroutine of the test's.
func rpcStream(url, token, era string, declareTasks bool, method string, params map[string]any, headers map[string]string, onNote func(map[string]any)) (rpcReply, error) {
	if params == nil {
		params = map[string]any{}
	}
	if era == "2026-07-28" {
		caps := map[string]any{}
		if declareTasks {
			caps["extensions"] = map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}
		}
		meta, _ := params["_meta"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["io.modelcontextprotocol/protocolVersion"] = era
		meta["io.modelcontextprotocol/clientCapabilities"] = caps
		meta["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "tasks-test", "version": "1"}
		params["_meta"] = meta
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": rpcIDs.Add(1), "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", era)
	req.Header.Set("Mcp-Method", method)
	if name, ok := params["name"].(string); ok {
		req.Header.Set("Mcp-Name", name)
	}
	if id, ok := params["taskId"].(string); ok {
		req.Header.Set("Mcp-Name", id)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return rpcReply{}, err
	}
	defer resp.Body.Close()
	var out rpcReply
	handle := func(data []byte) (bool, error) {
		var msg struct {
			Method string         `json:"method"`
			Params map[string]any `json:"params"`
			Result map[string]any `json:"result"`
			Error  *jsonrpc.Error `json:"error"`
		}
		if err := json.Unmarshal(data, &msg); err != nil {
			return false, fmt.Errorf("%s: undecodable message %q: %v", method, data, err)
		}
		if msg.Method != "" {
			note := map[string]any{"method": msg.Method, "params": msg.Params}
			out.Notifications = append(out.Notifications, note)
			if onNote != nil {
				onNote(note)
			}
			return false, nil
		}
		out.Result, out.Error = msg.Result, msg.Error
		return true, nil
	}
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<22)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				if done, err := handle([]byte(data)); done || err != nil {
					return out, err
				}
			}
		}
		return out, fmt.Errorf("%s: the stream ended without an answer (HTTP %d)", method, resp.StatusCode)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(resp.Body)
	// Errors of 2026-era requests come with an HTTP error status.
	if json.Valid(buf.Bytes()) {
		if done, err := handle(buf.Bytes()); done || err != nil {
			return out, err
		}
	}
	return out, fmt.Errorf("%s: HTTP %d: %s", method, resp.StatusCode, buf.String())
}

// rpcReplyOrErr carries rpcStream's answer across goroutines.
type rpcReplyOrErr struct {
	reply rpcReply
	err   error
}

// ok fails the test on a JSON-RPC error and returns the result.
func (r rpcReply) ok(t *testing.T, what string) map[string]any {
	t.Helper()
	if r.Error != nil {
		t.Fatalf("%s: error %d %s", what, r.Error.Code, r.Error.Message)
	}
	return r.Result
}

// fails checks that r is the JSON-RPC error code with a message containing want.
func (r rpcReply) fails(t *testing.T, what string, code int64, want string) {
	t.Helper()
	if r.Error == nil {
		t.Fatalf("%s: got result %v, want error %d", what, r.Result, code)
	}
	if r.Error.Code != code || !strings.Contains(r.Error.Message, want) {
		t.Fatalf("%s: error %d %q, want %d containing %q", what, r.Error.Code, r.Error.Message, code, want)
	}
}

// release lets a program waiting for the file "release" in its workspace end.
func release(t *testing.T, b *fake.Backend) {
	t.Helper()
	// The waiting run's sandbox is the one whose script is waitingProgram:
	// an earlier run's sandbox may still be live, being removed.
	testutil.Eventually(t, 60*time.Second, func() bool {
		for _, id := range b.Live() {
			dir := b.Workspace(id)
			if code, err := os.ReadFile(filepath.Join(dir, "main.sh")); err == nil && string(code) == waitingProgram {
				return os.WriteFile(filepath.Join(dir, "release"), nil, 0o644) == nil
			}
		}
		return false
	}, "the waiting run's sandbox")
}

// waitNoSandbox waits until every sandbox is gone.
func waitNoSandbox(t *testing.T, b *fake.Backend) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() bool { return len(b.Live()) == 0 }, "no sandbox left")
}

const waitingProgram = `echo started; until [ -e release ]; do sleep 0.01; done; echo finished`

func TestTasks20251125OverHTTP(t *testing.T) {
	url, b := taskServer(t, nil)
	const era = "2025-11-25"
	alice := teamTokens[0].Value
	bob := teamTokens[1].Value

	init := rpc(t, url, alice, era, false, "initialize", map[string]any{
		"protocolVersion": era, "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}}).ok(t, "initialize")
	caps, _ := init["capabilities"].(map[string]any)
	if tc, _ := caps["tasks"].(map[string]any); tc == nil || tc["requests"] == nil || tc["cancel"] == nil || tc["list"] == nil {
		t.Fatalf("initialize advertises no tasks capability: %v", caps)
	}

	tools := rpc(t, url, alice, era, false, "tools/list", nil).ok(t, "tools/list")
	for _, tool := range tools["tools"].([]any) {
		tool := tool.(map[string]any)
		exec, _ := tool["execution"].(map[string]any)
		if tool["name"] == "run_code" && (exec == nil || exec["taskSupport"] != "optional") {
			t.Errorf("run_code's execution metadata: %v, want taskSupport optional", tool["execution"])
		}
		if tool["name"] != "run_code" && exec != nil {
			t.Errorf("%s claims task support: %v", tool["name"], exec)
		}
	}

	created := rpc(t, url, alice, era, false, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash", "code": waitingProgram},
		"task": map[string]any{"ttl": 60000}, "_meta": map[string]any{"progressToken": "p1"},
	}).ok(t, "task-augmented tools/call")
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if id == "" || task["status"] != "working" || task["ttl"] != float64(60000) || task["createdAt"] == nil || task["pollInterval"] == nil {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	got := rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get")
	if got["taskId"] != id || got["status"] != "working" {
		t.Fatalf("tasks/get while running: %v", got)
	}
	list := rpc(t, url, alice, era, false, "tasks/list", nil).ok(t, "tasks/list")
	if tasks, _ := list["tasks"].([]any); len(tasks) != 1 || tasks[0].(map[string]any)["taskId"] != id {
		t.Fatalf("tasks/list: %v", list)
	}
	// The task is an execution too.
	execs := rpc(t, url, alice, era, false, "tools/call", map[string]any{"name": "list_executions", "arguments": map[string]any{}}).ok(t, "list_executions")
	if sc, _ := execs["structuredContent"].(map[string]any); sc == nil || len(sc["executions"].([]any)) != 1 {
		t.Errorf("list_executions does not show the task's run: %v", execs)
	}

	// Another principal gets exactly the answer for an unknown id.
	rpc(t, url, bob, era, false, "tasks/get", map[string]any{"taskId": id}).fails(t, "bob's tasks/get", -32602, "unknown task id")
	rpc(t, url, bob, era, false, "tasks/cancel", map[string]any{"taskId": id}).fails(t, "bob's tasks/cancel", -32602, "unknown task id")
	rpc(t, url, bob, era, false, "tasks/result", map[string]any{"taskId": id}).fails(t, "bob's tasks/result", -32602, "unknown task id")
	if bl := rpc(t, url, bob, era, false, "tasks/list", nil).ok(t, "bob's tasks/list"); len(bl["tasks"].([]any)) != 0 {
		t.Errorf("bob lists alice's task: %v", bl)
	}

	// tasks/result blocks until the end, streaming the output as progress.
	done := make(chan rpcReplyOrErr, 1)
	go func() {
		r, err := rpcStream(url, alice, era, false, "tasks/result", map[string]any{"taskId": id}, nil, nil)
		done <- rpcReplyOrErr{r, err}
	}()
	release(t, b)
	var reply rpcReplyOrErr
	select {
	case reply = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("tasks/result did not answer after the run ended")
	}
	if reply.err != nil {
		t.Fatal(reply.err)
	}
	res := reply.reply.ok(t, "tasks/result")
	sc, _ := res["structuredContent"].(map[string]any)
	if sc == nil || sc["stdout"] != "started\nfinished\n" || sc["status"] != "ok" || res["isError"] == true {
		t.Fatalf("tasks/result: %v", res)
	}
	if meta, _ := res["_meta"].(map[string]any); meta == nil || meta["io.modelcontextprotocol/related-task"] == nil {
		t.Errorf("tasks/result has no related-task _meta: %v", res["_meta"])
	}
	got = rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get")
	if got["status"] != "completed" {
		t.Fatalf("tasks/get after the end: %v", got)
	}
	// 2025-11-25 rejects the cancel of a terminal task with -32602; the
	// task stays as it was.
	rpc(t, url, alice, era, false, "tasks/cancel", map[string]any{"taskId": id}).fails(t, "cancel of a completed task", -32602, "already ended")
	if got := rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get"); got["status"] != "completed" {
		t.Errorf("a refused cancel changed the task: %v", got)
	}
	waitNoSandbox(t, b)
}

func TestTaskProgressReachesTasksResultOverHTTP(t *testing.T) {
	url, b := taskServer(t, nil)
	const era = "2025-11-25"
	alice := teamTokens[0].Value
	// The program prints until released; the test releases it once a
	// progress notification has reached the waiting tasks/result.
	created := rpc(t, url, alice, era, false, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash",
			"code": `until [ -e release ]; do echo tick; sleep 0.05; done`},
		"task": map[string]any{}, "_meta": map[string]any{"progressToken": "tok-7"},
	}).ok(t, "task-augmented tools/call")
	id := created["task"].(map[string]any)["taskId"].(string)
	var live []string
	testutil.Eventually(t, 60*time.Second, func() bool { live = b.Live(); return len(live) == 1 }, "the run's sandbox")
	ws := b.Workspace(live[0])
	var once sync.Once
	done := make(chan rpcReplyOrErr, 1)
	go func() {
		r, err := rpcStream(url, alice, era, false, "tasks/result", map[string]any{"taskId": id}, nil, func(n map[string]any) {
			if n["method"] == "notifications/progress" {
				once.Do(func() { _ = os.WriteFile(filepath.Join(ws, "release"), nil, 0o644) })
			}
		})
		done <- rpcReplyOrErr{r, err}
	}()
	var reply rpcReplyOrErr
	select {
	case reply = <-done:
	case <-time.After(60 * time.Second):
		t.Fatal("no progress reached tasks/result, or it did not answer once the run ended")
	}
	if reply.err != nil {
		t.Fatal(reply.err)
	}
	reply.reply.ok(t, "tasks/result")
	var progress strings.Builder
	for _, n := range reply.reply.Notifications {
		if n["method"] != "notifications/progress" {
			continue
		}
		p := n["params"].(map[string]any)
		if p["progressToken"] != "tok-7" {
			t.Errorf("progress with token %v, want the tools/call's tok-7", p["progressToken"])
		}
		if meta, _ := p["_meta"].(map[string]any); meta == nil || meta["io.modelcontextprotocol/related-task"] == nil {
			t.Errorf("progress of a task without its related-task _meta: %v", p)
		}
		fmt.Fprint(&progress, p["message"])
	}
	if !strings.Contains(progress.String(), "tick") {
		t.Errorf("progress on the tasks/result stream: %q, want the program's output", progress.String())
	}
}

func TestTaskCancelKillsTheSandbox(t *testing.T) {
	for _, era := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(era, func(t *testing.T) {
			url, b := taskServer(t, nil)
			alice := teamTokens[0].Value
			params := map[string]any{"name": "run_code", "arguments": map[string]any{"language": "bash", "code": "echo up; sleep 300"}}
			if era == "2025-11-25" {
				params["task"] = map[string]any{"ttl": 60000}
			}
			created := rpc(t, url, alice, era, true, "tools/call", params).ok(t, "tools/call")
			id, _ := created["taskId"].(string)
			if era == "2025-11-25" {
				id, _ = created["task"].(map[string]any)["taskId"].(string)
			}
			testutil.Eventually(t, 60*time.Second, func() bool { return len(b.Live()) == 1 }, "the run's sandbox")
			res := rpc(t, url, alice, era, true, "tasks/cancel", map[string]any{"taskId": id}).ok(t, "tasks/cancel")
			if era == "2025-11-25" && res["status"] != "cancelled" {
				t.Errorf("2025 tasks/cancel answered %v, want the cancelled task", res)
			}
			if era == "2026-07-28" && (res["resultType"] != "complete" || res["taskId"] != nil) {
				t.Errorf("2026 tasks/cancel answered %v, want an empty ack", res)
			}
			waitNoSandbox(t, b)
			got := rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get")
			if got["status"] != "cancelled" {
				t.Errorf("tasks/get after cancel: %v", got)
			}
			if era == "2026-07-28" {
				// Cancelling a task that has ended is acknowledged again.
				if again := rpc(t, url, alice, era, true, "tasks/cancel", map[string]any{"taskId": id}).ok(t, "second tasks/cancel"); again["resultType"] != "complete" {
					t.Errorf("second cancel: %v", again)
				}
			}
		})
	}
}

func TestTasks20260728Extension(t *testing.T) {
	url, b := taskServer(t, nil)
	const era = "2026-07-28"
	alice := teamTokens[0].Value
	bob := teamTokens[1].Value

	discover := rpc(t, url, alice, era, true, "server/discover", nil).ok(t, "server/discover")
	if ext, _ := discover["capabilities"].(map[string]any)["extensions"].(map[string]any); ext == nil || ext["io.modelcontextprotocol/tasks"] == nil {
		t.Fatalf("server/discover does not advertise the Tasks extension: %v", discover["capabilities"])
	}

	// Without the extension declared, run_code answers as always.
	plain := rpc(t, url, alice, era, false, "tools/call", map[string]any{"name": "run_code",
		"arguments": map[string]any{"language": "bash", "code": "echo plain"}}).ok(t, "tools/call without the extension")
	if plain["resultType"] != "complete" || plain["taskId"] != nil || plain["structuredContent"].(map[string]any)["stdout"] != "plain\n" {
		t.Fatalf("tools/call without the extension: %v", plain)
	}
	// A 2025 params.task in a 2026 request changes nothing either.
	legacy := rpc(t, url, alice, era, false, "tools/call", map[string]any{"name": "run_code", "task": map[string]any{"ttl": 1000},
		"arguments": map[string]any{"language": "bash", "code": "echo plain"}}).ok(t, "tools/call with a 2025 task param")
	if legacy["taskId"] != nil || legacy["task"] != nil {
		t.Fatalf("a 2026 request's params.task made a task: %v", legacy)
	}
	// A tool without task support answers directly even when declared.
	if langs := rpc(t, url, alice, era, true, "tools/call", map[string]any{"name": "list_languages", "arguments": map[string]any{}}).ok(t, "list_languages"); langs["resultType"] != "complete" {
		t.Errorf("list_languages with the extension declared: resultType %v", langs["resultType"])
	}

	created := rpc(t, url, alice, era, true, "tools/call", map[string]any{"name": "run_code",
		"arguments": map[string]any{"language": "bash", "code": waitingProgram}}).ok(t, "tools/call with the extension")
	id, _ := created["taskId"].(string)
	if created["resultType"] != "task" || id == "" || created["status"] != "working" || created["ttlMs"] != float64(3600000) ||
		created["pollIntervalMs"] == nil || created["task"] != nil || created["result"] != nil {
		t.Fatalf("CreateTaskResult: %v", created)
	}
	if got := rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get"); got["status"] != "working" || got["resultType"] != "complete" || got["result"] != nil {
		t.Fatalf("tasks/get while running: %v", got)
	}
	if ack := rpc(t, url, alice, era, true, "tasks/update", map[string]any{"taskId": id, "inputResponses": map[string]any{}}).ok(t, "tasks/update"); ack["resultType"] != "complete" {
		t.Errorf("tasks/update: %v", ack)
	}
	rpc(t, url, bob, era, true, "tasks/get", map[string]any{"taskId": id}).fails(t, "bob's tasks/get", -32602, "unknown task id")
	rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).fails(t, "tasks/get without the extension", -32021, "io.modelcontextprotocol/tasks")
	rpcWithHeaders(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": id}, map[string]string{"Mcp-Name": "task-elsewhere"}).
		fails(t, "tasks/get whose Mcp-Name names another task", -32020, "does not match params.taskId")
	rpc(t, url, alice, era, true, "tasks/result", map[string]any{"taskId": id}).fails(t, "2026 tasks/result", -32601, "method not found")
	rpc(t, url, alice, era, true, "tasks/list", nil).fails(t, "2026 tasks/list", -32601, "method not found")

	release(t, b)
	var got map[string]any
	testutil.Eventually(t, 60*time.Second, func() bool {
		got = rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get")
		return got["status"] != "working"
	}, "the task to end")
	result, _ := got["result"].(map[string]any)
	if got["status"] != "completed" || result == nil || result["structuredContent"].(map[string]any)["stdout"] != "started\nfinished\n" {
		t.Fatalf("tasks/get after the end: %v", got)
	}
	if meta, _ := result["_meta"].(map[string]any); meta != nil && meta["io.modelcontextprotocol/related-task"] != nil {
		t.Errorf("the inlined result carries the 2025 related-task _meta: %v", meta)
	}

	// A tool error completes the task (failed is for protocol errors).
	bad := rpc(t, url, alice, era, true, "tools/call", map[string]any{"name": "run_code",
		"arguments": map[string]any{"language": "cobol-84", "code": "x"}}).ok(t, "tools/call of a bad language")
	testutil.Eventually(t, 30*time.Second, func() bool {
		got = rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": bad["taskId"]}).ok(t, "tasks/get")
		return got["status"] != "working"
	}, "the bad task to end")
	if r, _ := got["result"].(map[string]any); got["status"] != "completed" || r == nil || r["isError"] != true {
		t.Errorf("a task whose tool reported an error: %v", got)
	}
	waitNoSandbox(t, b)
}

func TestTaskBadInput(t *testing.T) {
	url, b := taskServer(t, func(c *config.Config) { c.Executions.TaskMaxTTLSeconds = 600 })
	const era = "2025-11-25"
	alice := teamTokens[0].Value
	run := map[string]any{"language": "bash", "code": "echo hi"}
	tests := []struct {
		name   string
		method string
		params map[string]any
		code   int64
		want   string
	}{
		{"a ttl above the maximum is refused, naming the setting", "tools/call",
			map[string]any{"name": "run_code", "arguments": run, "task": map[string]any{"ttl": 600001}}, -32602, "executions.task_max_ttl_seconds"},
		{"a ttl that is not a positive whole number is refused", "tools/call",
			map[string]any{"name": "run_code", "arguments": run, "task": map[string]any{"ttl": -5}}, -32602, "positive whole number"},
		{"a task param that is not an object is refused", "tools/call",
			map[string]any{"name": "run_code", "arguments": run, "task": "soon"}, -32602, "must be an object"},
		{"a task on a tool without task support is refused", "tools/call",
			map[string]any{"name": "list_languages", "arguments": map[string]any{}, "task": map[string]any{}}, -32602, "does not support task-augmented calls"},
		{"tasks/get of an unknown id is invalid params", "tasks/get",
			map[string]any{"taskId": "task-0000"}, -32602, "unknown task id"},
		{"tasks/get without an id says what is missing", "tasks/get",
			map[string]any{}, -32602, "needs params.taskId"},
		{"tasks/result of an unknown id is invalid params", "tasks/result",
			map[string]any{"taskId": "task-0000"}, -32602, "unknown task id"},
		{"tasks/cancel of an unknown id is invalid params", "tasks/cancel",
			map[string]any{"taskId": "task-0000"}, -32602, "unknown task id"},
		{"tasks/list with a cursor this server never gave is invalid params", "tasks/list",
			map[string]any{"cursor": "abc"}, -32602, "unknown cursor"},
		{"tasks/update is not a 2025-11-25 method", "tasks/update",
			map[string]any{"taskId": "task-0000"}, -32601, "method not found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rpc(t, url, alice, era, false, tt.method, tt.params).fails(t, tt.name, tt.code, tt.want)
		})
	}
	if created, _, _ := b.Counts(); created != 0 {
		t.Errorf("bad input created %d sandboxes", created)
	}
}

func TestTaskExpiresAtItsTTL(t *testing.T) {
	url, b := taskServer(t, nil)
	const era = "2025-11-25"
	alice := teamTokens[0].Value
	created := rpc(t, url, alice, era, false, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash", "code": "echo up; sleep 300"},
		"task": map[string]any{"ttl": 1500},
	}).ok(t, "task-augmented tools/call")
	id := created["task"].(map[string]any)["taskId"].(string)
	// Once its ttl has passed the task is gone, and so is its sandbox.
	testutil.Eventually(t, 60*time.Second, func() bool {
		return rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).Error != nil
	}, "the task to expire")
	rpc(t, url, alice, era, false, "tasks/get", map[string]any{"taskId": id}).fails(t, "tasks/get of an expired task", -32602, "passed its ttl")
	waitNoSandbox(t, b)
}

// TestTasksOverStdio drives a 2025-era task over a long-lived connection
// (the in-memory transport, wrapped as serve wraps stdio): progress goes to
// the connection as the run prints, with the tools/call's token.
func TestTasksOverStdio(t *testing.T) {
	cfg := config.Default()
	eng, b := testutil.FakeEngine(t, &cfg)
	execs := executions.NewManager(eng)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		execs.Shutdown(ctx)
	})
	server := mcpserver.NewServer(mcpserver.Deps{Engine: eng, Executions: execs, Sessions: sessions.NewManager(eng)}, "test", nil)
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	ss, err := server.Connect(ctx, tasks.Transport(st), nil)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(); ss.Close() })

	var mu sync.Mutex
	replies := map[string]chan *jsonrpc.Response{}
	progress := make(chan map[string]any, 100)
	go func() {
		for {
			msg, err := conn.Read(ctx)
			if err != nil {
				return
			}
			switch m := msg.(type) {
			case *jsonrpc.Response:
				mu.Lock()
				ch := replies[fmt.Sprint(m.ID.Raw())]
				mu.Unlock()
				if ch != nil {
					ch <- m
				}
			case *jsonrpc.Request:
				if m.Method == "notifications/progress" {
					var p map[string]any
					_ = json.Unmarshal(m.Params, &p)
					progress <- p
				}
			}
		}
	}()
	var next atomic.Int64
	call := func(method string, params any) map[string]any {
		t.Helper()
		id := next.Add(1)
		ch := make(chan *jsonrpc.Response, 1)
		mu.Lock()
		replies[fmt.Sprint(id)] = ch
		mu.Unlock()
		raw, _ := json.Marshal(params)
		rid, _ := jsonrpc.MakeID(float64(id))
		if err := conn.Write(ctx, &jsonrpc.Request{ID: rid, Method: method, Params: raw}); err != nil {
			t.Fatal(err)
		}
		select {
		case r := <-ch:
			if r.Error != nil {
				t.Fatalf("%s: %v", method, r.Error)
			}
			var out map[string]any
			_ = json.Unmarshal(r.Result, &out)
			return out
		case <-time.After(60 * time.Second):
			t.Fatalf("%s: no answer", method)
			return nil
		}
	}
	call("initialize", map[string]any{"protocolVersion": "2025-11-25", "capabilities": map[string]any{}, "clientInfo": map[string]any{"name": "t", "version": "1"}})
	if err := conn.Write(ctx, &jsonrpc.Request{Method: "notifications/initialized", Params: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	created := call("tools/call", map[string]any{"name": "run_code", "task": map[string]any{"ttl": 60000},
		"arguments": map[string]any{"language": "bash", "code": waitingProgram}, "_meta": map[string]any{"progressToken": 42}})
	id := created["task"].(map[string]any)["taskId"].(string)
	// "started" arrives as progress before the run is released.
	select {
	case p := <-progress:
		if p["progressToken"] != float64(42) || !strings.Contains(fmt.Sprint(p["message"]), "started") {
			t.Errorf("progress %v", p)
		}
		if meta, _ := p["_meta"].(map[string]any); meta == nil || meta["io.modelcontextprotocol/related-task"] == nil {
			t.Errorf("progress of a task without its related-task _meta: %v", p)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("no progress from the task")
	}
	release(t, b)
	res := call("tasks/result", map[string]any{"taskId": id})
	if sc, _ := res["structuredContent"].(map[string]any); sc == nil || sc["stdout"] != "started\nfinished\n" {
		t.Fatalf("tasks/result: %v", res)
	}
	waitNoSandbox(t, b)
}

// TestSessionRunAsTask: run_code in a session runs as a task too, in the
// session's sandbox, which outlives the task.
func TestSessionRunAsTask(t *testing.T) {
	url, _ := taskServer(t, nil)
	const era = "2026-07-28"
	alice := teamTokens[0].Value
	sess := rpc(t, url, alice, era, false, "tools/call", map[string]any{"name": "create_session",
		"arguments": map[string]any{"language": "bash"}}).ok(t, "create_session")
	sid := sess["structuredContent"].(map[string]any)["session_id"].(string)
	run := func(code string) map[string]any {
		t.Helper()
		created := rpc(t, url, alice, era, true, "tools/call", map[string]any{"name": "run_code",
			"arguments": map[string]any{"language": "bash", "code": code, "session_id": sid}}).ok(t, "run_code in a session")
		if created["resultType"] != "task" {
			t.Fatalf("run_code in a session: %v, want a task", created)
		}
		var got map[string]any
		testutil.Eventually(t, 60*time.Second, func() bool {
			got = rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": created["taskId"]}).ok(t, "tasks/get")
			return got["status"] != "working"
		}, "the session task to end")
		result, _ := got["result"].(map[string]any)
		if got["status"] != "completed" || result == nil || result["isError"] == true {
			t.Fatalf("session task: %v", got)
		}
		return result["structuredContent"].(map[string]any)
	}
	run("echo kept > note.txt")
	if out := run("cat note.txt"); out["stdout"] != "kept\n" {
		t.Errorf("the second task in the session read %q, want the file the first one wrote", out["stdout"])
	}
	rpc(t, url, alice, era, false, "tools/call", map[string]any{"name": "close_session", "arguments": map[string]any{"session_id": sid}}).ok(t, "close_session")
}

// TestEndedTasksBeyondMaxKeptAreForgotten: results are not kept without
// bound within their TTL; the oldest ended task goes first.
func TestEndedTasksBeyondMaxKeptAreForgotten(t *testing.T) {
	url, _ := taskServer(t, func(c *config.Config) { c.Executions.MaxKept = 2 })
	const era = "2026-07-28"
	alice := teamTokens[0].Value
	var ids []any
	for i := range 3 {
		created := rpc(t, url, alice, era, true, "tools/call", map[string]any{"name": "run_code",
			"arguments": map[string]any{"language": "bash", "code": fmt.Sprintf("echo %d", i)}}).ok(t, "run_code")
		ids = append(ids, created["taskId"])
		testutil.Eventually(t, 60*time.Second, func() bool {
			return rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": created["taskId"]}).ok(t, "tasks/get")["status"] == "completed"
		}, "the task to complete")
	}
	rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": ids[0]}).fails(t, "the oldest task past max_kept", -32602, "unknown task id")
	for _, id := range ids[1:] {
		rpc(t, url, alice, era, true, "tasks/get", map[string]any{"taskId": id}).ok(t, "a task within max_kept")
	}
}

// TestEveryCallResolvesItsLanguageOnce: a call's language is looked up in
// the registry once, by engine.Prepare (or, in a session, against the
// session's), and the plan it makes is what every later step reuses: the
// task's execution and progress stages, the tool handler, the run.
func TestEveryCallResolvesItsLanguageOnce(t *testing.T) {
	url, _, eng := taskServerEngine(t, nil)
	alice := teamTokens[0].Value
	sess := rpc(t, url, alice, "2026-07-28", false, "tools/call", map[string]any{"name": "create_session",
		"arguments": map[string]any{"language": "bash"}}).ok(t, "create_session")
	sid := sess["structuredContent"].(map[string]any)["session_id"].(string)
	oneShot := map[string]any{"language": "sh", "code": "echo hi"}
	inSession := map[string]any{"language": "bash", "code": "echo hi", "session_id": sid}
	refused := map[string]any{"language": "bash", "code": " "}
	// waitTask waits for the task a call created to end, in its era.
	waitTask := func(t *testing.T, era string, modern bool, created map[string]any) {
		t.Helper()
		id, _ := created["taskId"].(string)
		if task, ok := created["task"].(map[string]any); ok {
			id, _ = task["taskId"].(string)
		}
		if id == "" {
			t.Fatalf("no task: %v", created)
		}
		testutil.Eventually(t, 60*time.Second, func() bool {
			got := rpc(t, url, alice, era, modern, "tasks/get", map[string]any{"taskId": id}).ok(t, "tasks/get")
			return got["status"] != "working"
		}, "the task to end")
	}
	tests := []struct {
		name string
		call func(t *testing.T)
	}{
		{"run_code", func(t *testing.T) {
			rpc(t, url, alice, "2026-07-28", false, "tools/call", map[string]any{"name": "run_code", "arguments": oneShot}).ok(t, "run_code")
		}},
		{"run_code as a 2025-11-25 task with progress", func(t *testing.T) {
			created := rpc(t, url, alice, "2025-11-25", false, "tools/call", map[string]any{"name": "run_code", "arguments": oneShot,
				"task": map[string]any{}, "_meta": map[string]any{"progressToken": "p"}}).ok(t, "task")
			waitTask(t, "2025-11-25", false, created)
		}},
		{"run_code as a 2026-07-28 task", func(t *testing.T) {
			created := rpc(t, url, alice, "2026-07-28", true, "tools/call", map[string]any{"name": "run_code", "arguments": oneShot}).ok(t, "task")
			waitTask(t, "2026-07-28", true, created)
		}},
		{"a refused run_code as a task", func(t *testing.T) {
			created := rpc(t, url, alice, "2026-07-28", true, "tools/call", map[string]any{"name": "run_code", "arguments": refused}).ok(t, "task")
			waitTask(t, "2026-07-28", true, created)
		}},
		{"run_code in a session", func(t *testing.T) {
			rpc(t, url, alice, "2026-07-28", false, "tools/call", map[string]any{"name": "run_code", "arguments": inSession}).ok(t, "run_code")
		}},
		{"run_code in a session as a task", func(t *testing.T) {
			created := rpc(t, url, alice, "2026-07-28", true, "tools/call", map[string]any{"name": "run_code", "arguments": inSession}).ok(t, "task")
			waitTask(t, "2026-07-28", true, created)
		}},
		{"start_execution", func(t *testing.T) {
			started := rpc(t, url, alice, "2026-07-28", false, "tools/call", map[string]any{"name": "start_execution", "arguments": oneShot}).ok(t, "start_execution")
			id := started["structuredContent"].(map[string]any)["execution_id"]
			rpc(t, url, alice, "2026-07-28", false, "tools/call", map[string]any{"name": "get_execution",
				"arguments": map[string]any{"execution_id": id, "wait_seconds": 60}}).ok(t, "get_execution")
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := eng.Registry().Lookups()
			tt.call(t)
			if n := eng.Registry().Lookups() - before; n != 1 {
				t.Errorf("the call looked its language up %d times, want once", n)
			}
		})
	}
}
