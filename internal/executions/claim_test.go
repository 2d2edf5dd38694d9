package executions

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestAStartWaitingForItsRunSlotHoldsItsPlace: a start that has passed the
// executions_kept check but still waits for a run slot counts against the
// quota, so a second start at the same moment is refused instead of both
// being kept (one over the quota); a start that gives up gives its place back.
func TestAStartWaitingForItsRunSlotHoldsItsPlace(t *testing.T) {
	cfg := config.Default()
	cfg.MaxConcurrentRuns = 1
	cfg.QueueTimeoutSeconds = 600
	cfg.Quotas.ExecutionsKept = 1
	e, _ := testutil.FakeEngine(t, &cfg)
	m := NewManager(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Shutdown(ctx)
	})
	as := func(ctx context.Context, name string) context.Context {
		return principal.WithContext(ctx, principal.Principal{Name: name})
	}
	sleeper := engine.Request{Language: "bash", Code: "sleep 300", TimeoutSeconds: 600}
	// Bob's execution takes the server's only run slot.
	if _, err := m.Start(as(context.Background(), "bob"), sleeper); err != nil {
		t.Fatal(err)
	}
	// Alice's first start queues for it, holding her one place.
	waiting, giveUp := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() {
		_, err := m.Start(as(waiting, "alice"), sleeper)
		first <- err
	}()
	claimed := func() int {
		m.mu.Lock()
		defer m.mu.Unlock()
		return m.claimed["alice"]
	}
	testutil.Eventually(t, 30*time.Second, func() bool { return claimed() == 1 }, "alice's first start to claim its place")

	_, err := m.Start(as(context.Background(), "alice"), sleeper)
	if err == nil || engine.CodeOf(err) != engine.CodeQuota || !strings.Contains(err.Error(), "running or starting") {
		t.Fatalf("alice's second start beside a queued one: %v, want the executions_kept quota", err)
	}

	giveUp()
	if err := <-first; err == nil || engine.CodeOf(err) != engine.CodeBusy {
		t.Fatalf("the queued start, given up: %v, want busy", err)
	}
	if n := claimed(); n != 0 {
		t.Fatalf("a start that gave up still holds %d places", n)
	}
}
