package executions_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// TestTrackedWorkIsAnExecution: work started with Track (how MCP tasks run)
// is an execution like any other: owned, listed, its output kept, and
// cancel_execution ends it through its context.
func TestTrackedWorkIsAnExecution(t *testing.T) {
	m, _ := manager(t)
	alice, bob := as("alice", false), as("bob", false)
	printed := make(chan struct{})
	s, err := m.Track(alice, "python", []string{"run"}, func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("hello\n")})
		close(printed)
		<-ctx.Done()
		return nil, ctx.Err()
	})
	if err != nil {
		t.Fatal(err)
	}
	<-printed
	got, err := m.Get(alice, s.ExecutionID, 0, 0, 0)
	if err != nil || got.Status != executions.StatusRunning || got.Stdout != "hello\n" || got.Language != "python" {
		t.Fatalf("running: %+v, %v; want running, its output, the language it was given", got, err)
	}
	if _, err := m.Get(bob, s.ExecutionID, 0, 0, 0); err == nil {
		t.Error("bob reads alice's tracked execution")
	}
	if list := m.List(alice); len(list) != 1 || list[0].ExecutionID != s.ExecutionID {
		t.Errorf("list: %+v", list)
	}
	cancelled, err := m.Cancel(alice, s.ExecutionID)
	if err != nil || cancelled.Status != executions.StatusCancelled {
		t.Fatalf("cancel: %+v, %v", cancelled, err)
	}
	if got, _ := m.Get(alice, s.ExecutionID, time.Second, 0, 0); got.EndedAt == nil {
		t.Errorf("the work did not end when cancelled: %+v", got)
	}
}
