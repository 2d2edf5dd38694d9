//go:build !fast

package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// taskRPC posts one JSON-RPC request of the 2025-11-25 era to url as the
// holder of token and returns its result, or the error's message.
func taskRPC(t *testing.T, url, token, method string, params map[string]any) (map[string]any, string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	defer resp.Body.Close()
	// The answer is the one message with a result or an error, in a JSON
	// body or as an event of a stream.
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		line := strings.TrimPrefix(sc.Text(), "data: ")
		var msg struct {
			Result map[string]any `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		if msg.Error != nil {
			return nil, msg.Error.Message
		}
		if msg.Result != nil {
			return msg.Result, ""
		}
	}
	t.Fatalf("%s: no answer (HTTP %d)", method, resp.StatusCode)
	return nil, ""
}

// startTask calls run_code as a task and returns the task's id.
func startTask(t *testing.T, url, token, code string) string {
	t.Helper()
	created, errMsg := taskRPC(t, url, token, "tools/call", map[string]any{
		"name": "run_code", "arguments": map[string]any{"language": "bash", "code": code},
		"task": map[string]any{"ttl": 600000},
	})
	task, _ := created["task"].(map[string]any)
	id, _ := task["taskId"].(string)
	if errMsg != "" || id == "" {
		t.Fatalf("a task-augmented run_code: %v %s", created, errMsg)
	}
	return id
}

// taskStatus is the status tasks/get gives for id.
func taskStatus(t *testing.T, url, token, id string) string {
	t.Helper()
	got, errMsg := taskRPC(t, url, token, "tasks/get", map[string]any{"taskId": id})
	if errMsg != "" {
		t.Fatalf("tasks/get %s: %s", id, errMsg)
	}
	status, _ := got["status"].(string)
	return status
}

// TestRestartKeepsTasks: kill -9 of the server, then a new one on the same
// data directory: a finished task's status and result read the same for
// its owner (and not for another), and a task running at the kill ends
// failed with a message that says the server restarted, not working for
// ever.
func TestRestartKeepsTasks(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	dataDir := t.TempDir()
	first := startServerOn(t, dataDir)

	finished := startTask(t, first.url, restartAlice, "echo finished-task")
	// tasks/result waits for the task's end (polling tasks/get would meet
	// the server's rate limit).
	if result, errMsg := taskRPC(t, first.url, restartAlice, "tasks/result", map[string]any{"taskId": finished}); errMsg != "" || result == nil {
		t.Fatalf("the first task's result: %v %s", result, errMsg)
	}
	running := startTask(t, first.url, restartAlice, "sleep 300")
	waitFor(t, "the second task's sandbox", 60*time.Second, func() bool {
		return len(containersOf(t, cli, first.cmd.Process.Pid)) > 0
	})

	pid := first.cmd.Process.Pid
	_ = first.cmd.Process.Kill()
	_ = first.cmd.Wait()

	next := startServerOn(t, dataDir)
	if status := taskStatus(t, next.url, restartAlice, finished); status != "completed" {
		t.Errorf("the finished task after the restart: %s", status)
	}
	result, errMsg := taskRPC(t, next.url, restartAlice, "tasks/result", map[string]any{"taskId": finished})
	if sc, _ := result["structuredContent"].(map[string]any); errMsg != "" || sc == nil || sc["stdout"] != "finished-task\n" {
		t.Errorf("the finished task's result after the restart: %v %s", result, errMsg)
	}
	for _, id := range []string{finished, running} {
		if _, errMsg := taskRPC(t, next.url, restartBob, "tasks/get", map[string]any{"taskId": id}); !strings.Contains(errMsg, "unknown task id") {
			t.Errorf("bob's tasks/get of alice's task %s after the restart: %q", id, errMsg)
		}
	}
	got, errMsg := taskRPC(t, next.url, restartAlice, "tasks/get", map[string]any{"taskId": running})
	if msg := fmt.Sprint(got["statusMessage"]); errMsg != "" || got["status"] != "failed" || !strings.Contains(msg, "restarted") {
		t.Errorf("the task running at the kill, after the restart: %v %s", got, errMsg)
	}
	listed, _ := taskRPC(t, next.url, restartAlice, "tasks/list", map[string]any{})
	if tasks, _ := listed["tasks"].([]any); len(tasks) != 2 {
		t.Errorf("alice's tasks after the restart: %v", listed)
	}
	waitFor(t, "the killed server's containers removed", 30*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}
