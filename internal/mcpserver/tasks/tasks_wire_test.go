package tasks

import (
	"encoding/json"
	"net/http"
	"testing"
)

func TestLiftTaskParam(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"params without a task are left as they are",
			`{"name":"run_code","arguments":{"code":"task"}}`, `{"name":"run_code","arguments":{"code":"task"}}`},
		{"the task moves into _meta",
			`{"name":"run_code","task":{"ttl":5}}`, `{"_meta":{"io.mcp-code-runner/task":{"ttl":5}},"name":"run_code"}`},
		{"the task joins an existing _meta",
			`{"name":"run_code","_meta":{"progressToken":1},"task":{}}`, `{"_meta":{"io.mcp-code-runner/task":{},"progressToken":1},"name":"run_code"}`},
		{"a malformed _meta is left for the SDK to reject",
			`{"name":"run_code","_meta":7,"task":{}}`, `{"name":"run_code","_meta":7,"task":{}}`},
		{"params that are not an object are left as they are",
			`["task"]`, `["task"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := liftTaskParam(json.RawMessage(tt.in))
			if !jsonEqual(t, got, tt.want) {
				t.Errorf("liftTaskParam(%s) = %s, want %s", tt.in, got, tt.want)
			}
		})
	}
}

func jsonEqual(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return string(a) == b
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

func TestTaskNameMismatch(t *testing.T) {
	header := func(version, name string) http.Header {
		h := http.Header{}
		h.Set("MCP-Protocol-Version", version)
		if name != "" {
			h.Set("Mcp-Name", name)
		}
		return h
	}
	params := json.RawMessage(`{"taskId":"task-1"}`)
	tests := []struct {
		name     string
		header   http.Header
		mismatch bool
	}{
		{"a 2026 request naming its task passes", header("2026-07-28", "task-1"), false},
		{"a 2026 request without Mcp-Name passes", header("2026-07-28", ""), false},
		{"a 2026 request naming another task is a mismatch", header("2026-07-28", "task-2"), true},
		{"a 2025 request has no routing header to check", header("2025-11-25", "task-2"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := taskNameMismatch(tt.header, params); (got != "") != tt.mismatch {
				t.Errorf("taskNameMismatch = %q, want mismatch %v", got, tt.mismatch)
			}
		})
	}
}
