//go:build !fast

package e2e

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// soakMix is the mix of the soak: mostly ordinary programs, some hostile.
var soakMix = []struct {
	name string
	req  engine.Request
	ok   func(*engine.Result) bool
}{
	{"python hello", engine.Request{Language: "python", Code: "print('hello, world')"}, func(r *engine.Result) bool { return r.Status == engine.StatusOK }},
	{"bash hello", engine.Request{Language: "bash", Code: "echo hello, world"}, func(r *engine.Result) bool { return r.Status == engine.StatusOK }},
	{"javascript hello", engine.Request{Language: "javascript", Code: "console.log('hello, world')"}, func(r *engine.Result) bool { return r.Status == engine.StatusOK }},
	{"python stdin", engine.Request{Language: "python", Code: "print(input()[::-1])", Stdin: "abc\n"}, func(r *engine.Result) bool { return r.Stdout == "cba\n" }},
	{"bash exit 3", engine.Request{Language: "bash", Code: "exit 3"}, func(r *engine.Result) bool { return r.ExitCode == 3 }},
	{"python error", engine.Request{Language: "python", Code: "1/0"}, func(r *engine.Result) bool { return r.Status == engine.StatusError }},
	{"python hello", engine.Request{Language: "python", Code: "print(sum(range(10**5)))"}, func(r *engine.Result) bool { return r.Status == engine.StatusOK }},
	{"fork bomb", engine.Request{Language: "bash", Code: ":(){ :|:& };:", TimeoutSeconds: 1}, func(*engine.Result) bool { return true }}, // any clear result: the main shell may even exit 0
	// The memory limit ends it (TestMemoryBomb proves that); a soak on a
	// heavily loaded host may see the clock come first, which is as clear
	// an end: the soak is about what every run leaves behind.
	{"memory bomb", engine.Request{Language: "python", Code: "x = bytearray(1 << 30)", TimeoutSeconds: 30}, func(r *engine.Result) bool {
		return r.OOMKilled || r.Status == engine.StatusError || r.TimedOut
	}},
	{"stdout flood", engine.Request{Language: "bash", Code: "yes", TimeoutSeconds: 1}, func(r *engine.Result) bool { return r.TimedOut && r.StdoutTruncated }},
	{"sleeper", engine.Request{Language: "bash", Code: "sleep 30", TimeoutSeconds: 1}, func(r *engine.Result) bool { return r.TimedOut }},
	{"escapee", engine.Request{Language: "bash", Code: "setsid sleep 300 & nohup sleep 300 & echo left"}, func(r *engine.Result) bool { return r.Stdout == "left\n" }},
}

// TestSoak runs MCR_SOAK_RUNS (default 400) mixed runs, good and hostile,
// four at a time, through a warm pool; then no container may remain and the
// server's heap must be back near where it started. A quiet machine does the
// 400 in about two minutes (MCR_SOAK_RUNS=1000 for a longer soak); a loaded
// one stops starting runs after soakBudget and has done at least soakMinRuns
// by then.
func TestSoak(t *testing.T) {
	const (
		soakBudget  = 6 * time.Minute
		soakMinRuns = 100
	)
	runs := 400
	if v, err := strconv.Atoi(os.Getenv("MCR_SOAK_RUNS")); err == nil {
		runs = v
	}
	if testing.Short() || runs <= 0 {
		t.Skip("soak skipped (-short or MCR_SOAK_RUNS=0)")
	}
	cfg := config.Default()
	cfg.QueueTimeoutSeconds = 120
	// The ordinary programs get a time limit that a loaded host cannot
	// reach (a hello world timed out at 10 s at load 30); the hostile
	// ones keep their own short limits.
	testutil.Unhurried(&cfg)
	e, b := testutil.Engine(t, &cfg)
	reg := languages.Builtin()
	for _, l := range []string{"python", "bash", "javascript"} {
		testutil.RequireImage(t, b, reg, l)
	}
	e.StartPool()
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapInuse
	}
	// A few runs first, so the baseline includes what every run needs once.
	for i := range 4 {
		if _, err := e.Run(context.Background(), soakMix[i].req, engine.RunOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	before := heap()
	start := time.Now()
	var next, done atomic.Int64
	var mu sync.Mutex
	failures := map[string]int{}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for {
				if time.Since(start) > soakBudget {
					return
				}
				i := int(next.Add(1)) - 1
				if i >= runs {
					return
				}
				c := soakMix[i%len(soakMix)]
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				r, err := e.Run(ctx, c.req, engine.RunOptions{})
				cancel()
				done.Add(1)
				if err != nil || !c.ok(r) {
					mu.Lock()
					failures[fmt.Sprintf("%s: %v", c.name, errOrStatus(err, r))]++
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	took := time.Since(start)
	cctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := e.Close(cctx); err != nil {
		t.Fatal(err)
	}
	after := heap()
	left := containersOf(t, b.Client(), os.Getpid())
	t.Logf("soak: %d of %d runs in %s (%.1f runs/s); heap in use %.1f MiB before, %.1f MiB after; %d containers left",
		done.Load(), runs, took.Round(time.Second), float64(done.Load())/took.Seconds(), float64(before)/(1<<20), float64(after)/(1<<20), len(left))
	if n := done.Load(); n < int64(min(runs, soakMinRuns)) {
		t.Errorf("only %d runs in the soak's %s", n, soakBudget)
	}
	if len(left) > 0 {
		t.Errorf("containers left after the soak: %v", left)
	}
	// The output and artifact stores keep up to their caps for an hour, so
	// "near where it started" allows them their share.
	if after > before+96<<20 {
		t.Errorf("heap grew from %d to %d MiB over the soak", before>>20, after>>20)
	}
	for f, n := range failures {
		t.Errorf("%d× %s", n, f)
	}
}

func errOrStatus(err error, r *engine.Result) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("status %s exit %d timed_out %v oom %v stdout %.40q", r.Status, r.ExitCode, r.TimedOut, r.OOMKilled, r.Stdout)
}
