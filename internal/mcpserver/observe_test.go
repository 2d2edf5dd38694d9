package mcpserver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// TestToolCallsAreObserved: every tool call reaches Deps.OnToolCall once,
// with the code's hash (never the code), the ids it names and how it ended.
func TestToolCallsAreObserved(t *testing.T) {
	eng := offlineEngine(t)
	calls := make(chan mcpserver.ToolCall, 10)
	sess := sessions.NewManager(eng)
	t.Cleanup(sess.Shutdown)
	server := mcpserver.NewServer(mcpserver.Deps{Engine: eng, Executions: executions.NewManager(eng), Sessions: sess,
		OnToolCall: func(_ context.Context, c mcpserver.ToolCall) { calls <- c }}, "test", nil)
	ctx := context.Background()
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })

	const code = "print('secret')"
	sum := sha256.Sum256([]byte(code))
	tests := []struct {
		name  string
		tool  string
		args  map[string]any
		want  mcpserver.ToolCall
		fails bool
	}{
		{"a refused run names its code by hash", "run_code", map[string]any{"language": "intercal", "code": code},
			mcpserver.ToolCall{Tool: "run_code", Language: "intercal", CodeSHA256: hex.EncodeToString(sum[:]), Status: "rejected"}, true},
		{"a file tool names its session", "read_file", map[string]any{"session_id": "s-404", "path": "a.txt"},
			mcpserver.ToolCall{Tool: "read_file", SessionID: "s-404", Status: "rejected"}, true},
		{"an execution tool names its execution", "cancel_execution", map[string]any{"execution_id": "x-404"},
			mcpserver.ToolCall{Tool: "cancel_execution", ExecutionID: "x-404", Status: "rejected"}, true},
		{"a listing succeeds", "list_sessions", map[string]any{},
			mcpserver.ToolCall{Tool: "list_sessions", Status: "ok"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: tt.args}); err != nil {
				t.Fatal(err)
			}
			got := <-calls
			if got.Tool != tt.want.Tool || got.Language != tt.want.Language || got.CodeSHA256 != tt.want.CodeSHA256 ||
				got.SessionID != tt.want.SessionID || got.ExecutionID != tt.want.ExecutionID || got.Status != tt.want.Status {
				t.Errorf("observed %+v, want %+v", got, tt.want)
			}
			if got.Time.IsZero() || got.Duration <= 0 {
				t.Errorf("observed no time or duration: %+v", got)
			}
			if (got.ErrorCode() != "") != tt.fails {
				t.Errorf("error code %q (err %v), want a failure: %v", got.ErrorCode(), got.Err, tt.fails)
			}
		})
	}
}
