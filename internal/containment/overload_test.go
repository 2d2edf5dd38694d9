//go:build !fast

package containment_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
)

// TestOverload fires 200 runs at once at an engine with 8 run slots and a
// 5 s queue timeout. Each call gets a result or a busy error, none hangs, the
// server's heap stays bounded and nothing is left behind; then the engine
// serves normally.
func TestOverload(t *testing.T) {
	const calls = 200
	limits := func(c *config.Config) {
		c.MaxConcurrentRuns = 8
		c.QueueTimeoutSeconds = 5
	}
	for _, pooled := range []bool{false, true} {
		name := "cold"
		if pooled {
			name = "warm pool"
		}
		t.Run(name, func(t *testing.T) {
			var h *harness
			if pooled {
				h = newPooledHarness(t, "bash", limits, func(c *config.Config) {
					c.Pool.Size = 0
					c.Pool.Sizes = []string{"bash=2"}
				})
				// The pool's own sandboxes are what surely run: the calls
				// start once they are there (a loaded daemon, Podman's
				// above all, may take longer than a call waits to make them).
				waitPoolFull(t, h.e.Engine)
			} else {
				h = newHarness(t, "bash", limits)
			}
			// A call's worst case: 5 s for a slot, 5 s for a warm sandbox, the
			// run, and container start and removal on a loaded daemon.
			const bound = 60 * time.Second
			w := watchHeap()
			var (
				mu        sync.Mutex
				ok, busy  int
				other     []string
				durations []time.Duration
			)
			var wg sync.WaitGroup
			start := time.Now()
			for range calls {
				wg.Go(func() {
					ctx, cancel := context.WithTimeout(context.Background(), 3*bound)
					defer cancel()
					t0 := time.Now()
					r, err := h.e.Run(ctx, engine.Request{Language: "bash", Code: "sleep 0.2; echo ok", TimeoutSeconds: 10}, engine.RunOptions{})
					d := time.Since(t0)
					mu.Lock()
					defer mu.Unlock()
					durations = append(durations, d)
					switch {
					case err != nil && engine.CodeOf(err) == engine.CodeBusy:
						busy++
					case err != nil:
						other = append(other, engine.CodeOf(err)+": "+err.Error())
					case r.Status == engine.StatusOK && r.Stdout == "ok\n":
						ok++
					default:
						other = append(other, "result "+r.Status+": "+outcome(r, d))
					}
				})
			}
			wg.Wait()
			wall := time.Since(start)
			w.check(t, heapBudget)
			slices.Sort(durations)
			slowest := durations[len(durations)-1]
			t.Logf("OUTCOME %d calls in %s: %d ok, %d busy, %d other; median call %s, slowest %s",
				calls, wall.Round(time.Millisecond), ok, busy, len(other), durations[len(durations)/2].Round(time.Millisecond), slowest.Round(time.Millisecond))
			for _, o := range other {
				t.Errorf("neither a result nor busy: %s", o)
			}
			if ok+busy+len(other) != calls {
				t.Errorf("%d calls answered of %d", ok+busy+len(other), calls)
			}
			// Cold, the first 8 calls take the slots and run. From a warm
			// pool of 2, the calls past the pool wait 5 s for a refill, which
			// a loaded daemon may not make in time: busy is then the right
			// answer, and only the pool's own sandboxes are sure to run.
			if minOK := map[bool]int{false: 8, true: 2}[pooled]; ok < minOK {
				t.Errorf("only %d runs succeeded; at least %d should have run", ok, minOK)
			}
			if slowest > bound {
				t.Errorf("a call took %s, over the bound of %s", slowest, bound)
			}
			if n := len(h.e.Inflight()); n != 0 {
				t.Errorf("%d runs still in flight after every call returned", n)
			}
		})
	}
}
