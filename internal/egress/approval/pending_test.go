package approval

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// TestAQuestionIsPendingUntilAnsweredOrForgotten: the operator sees the
// questions asked and not yet answered, oldest first, until the answer
// comes or PendingTTL passes.
func TestAQuestionIsPendingUntilAnsweredOrForgotten(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)}
	a := New(store.NewMemory(), time.Hour, c.now)
	a.Asked(ctx, "alice", "API.example.com", "run-1")
	c.t = c.t.Add(time.Second)
	a.Asked(ctx, "bob/x", "b.example.com", "run-2")
	got, err := a.Pending(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Owner != "alice" || got[0].Host != "api.example.com" || got[0].RunID != "run-1" || got[1].Owner != "bob/x" {
		t.Fatalf("pending: %+v", got)
	}
	a.Answered(ctx, "alice", "api.example.com")
	if got, _ := a.Pending(ctx); len(got) != 1 || got[0].Owner != "bob/x" {
		t.Fatalf("after alice's answer: %+v", got)
	}
	c.t = c.t.Add(PendingTTL + time.Second)
	if got, _ := a.Pending(ctx); len(got) != 0 {
		t.Errorf("after the TTL: %+v", got)
	}
}
