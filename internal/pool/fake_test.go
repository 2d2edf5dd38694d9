package pool_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// These tests run the pool on the fake backend (the real agent in this
// process, no Docker): ordering, back-off, refill and replacement. The
// Docker tests prove what a real sandbox does.

var bashTemplate = sandbox.Template{Image: "fake/bash", Purpose: "bash", MaxLife: time.Hour}

// fakePool returns a pool of one key, "bash", on b, closed when the test
// ends, after which nothing of it may be left.
func fakePool(t *testing.T, b *fake.Backend, opts pool.Options) *pool.Pool {
	t.Helper()
	if opts.MaxWaiters == 0 {
		opts.MaxWaiters = 8
	}
	if opts.WaitTimeout == 0 {
		opts.WaitTimeout = time.Minute
	}
	p := pool.New(b, map[string]sandbox.Template{"bash": bashTemplate}, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := p.Close(ctx); err != nil {
			t.Error(err)
		}
		if _, removed, live := b.Counts(); live != 0 {
			t.Errorf("Close left %d sandboxes (removed %d)", live, removed)
		}
	})
	return p
}

func stat(p *pool.Pool) pool.Stat { return p.Stats()[0] }

// waitStat waits until the pool's stat satisfies cond.
func waitStat(t *testing.T, p *pool.Pool, what string, cond func(pool.Stat) bool) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() bool { return cond(stat(p)) }, what+fmt.Sprintf(" (last %+v)", stat(p)))
}

// runOn runs a shell line in sb and returns its stdout.
func runOn(t *testing.T, sb sandbox.Sandbox, script string) string {
	t.Helper()
	res, err := sb.Exec(context.Background(), sandbox.Job{Deadline: time.Minute, Request: wireRequest(script)}, nil)
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("exec: %v %+v", err, res)
	}
	return string(res.Stages[0].Stdout)
}

func wireRequest(script string) wire.Request {
	return wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 1 << 20,
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "-c", script}, TimeoutMs: 30_000}}}
}

func TestPoolFillsToSizeAndServesRealRuns(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}})
	waitStat(t, p, "2 idle", func(s pool.Stat) bool { return s.Idle == 2 })
	sb, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	if got := runOn(t, sb, "echo hi"); got != "hi\n" {
		t.Errorf("stdout %q", got)
	}
	p.Release(sb)
	waitStat(t, p, "refilled to 2 idle, 1 served, 3 created", func(s pool.Stat) bool {
		return s.Idle == 2 && s.Served == 1 && s.Created == 3 && s.Removing == 0
	})
	if created, removed, live := b.Counts(); created != 3 || removed != 1 || live != 2 {
		t.Errorf("backend: created %d removed %d live %d; want 3, 1, 2", created, removed, live)
	}
}

// TestWaitersServedInOrder queues runs on an empty pool one after another
// and checks that the sandboxes made next go to them in that order.
func TestWaitersServedInOrder(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, CreateConcurrency: 1})
	ctx := context.Background()
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	// Creations wait until the gate opens, so that every run queues first.
	gate := make(chan struct{})
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	first, err := p.Get(ctx, "bash")
	if err != nil {
		t.Fatal(err)
	}
	p.Release(first)
	// Which run got which sandbox: the fake numbers its sandboxes in the
	// order they are made, one at a time here.
	const runs = 4
	type grant struct {
		run int
		id  string
	}
	served := make(chan grant, runs)
	for i := range runs {
		go func() {
			sb, err := p.Get(ctx, "bash")
			if err != nil {
				t.Error(err)
				served <- grant{i, ""}
				return
			}
			served <- grant{i, sb.ID()}
			p.Release(sb)
		}()
		waitStat(t, p, fmt.Sprintf("%d runs waiting", i+1), func(s pool.Stat) bool { return s.Waiting == i+1 })
	}
	close(gate)
	made := make([]string, runs) // made[run] is the sandbox run got
	for range runs {
		g := <-served
		made[g.run] = g.id
	}
	for run := 1; run < runs; run++ {
		if seq(made[run-1]) >= seq(made[run]) {
			t.Fatalf("runs got sandboxes %v, want them in the order the runs came (first come, first served)", made)
		}
	}
}

// seq is the creation number in a fake sandbox's ID ("fake-12").
func seq(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "fake-"))
	return n
}

// TestPoolThatCannotStart answers at once with the reason when its image
// is missing, and counts the failures.
func TestPoolThatCannotStart(t *testing.T) {
	b := testutil.FakeBackend(t)
	b.MissingImages = map[string]bool{bashTemplate.Image: true}
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}, WaitTimeout: 20 * time.Second})
	waitStat(t, p, "a failure", func(s pool.Stat) bool { return s.Failures > 0 && s.Creating == 0 })
	start := time.Now()
	_, err := p.Get(context.Background(), "bash")
	if !errors.Is(err, sandbox.ErrImageMissing) {
		t.Fatalf("got %v, want the missing image error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %s to report a pool that cannot start", took)
	}
	if s := stat(p); s.Error == "" {
		t.Errorf("stats do not show the failure: %+v", s)
	}
}

// lockedBuffer is a log destination the pool's goroutines write while the
// test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestPoolWithoutItsImageSaysWhyOnceAndBacksOff: a pool whose image is
// missing (never built, or a base the daemon could not pull) logs the
// reason and the build command once, and probes again after 1 s, then 2 s,
// rather than retrying in a loop.
func TestPoolWithoutItsImageSaysWhyOnceAndBacksOff(t *testing.T) {
	b := testutil.FakeBackend(t)
	b.MissingImages = map[string]bool{bashTemplate.Image: true}
	var logs lockedBuffer
	start := time.Now()
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	waitStat(t, p, "three failed creations", func(s pool.Stat) bool { return s.Failures >= 3 })
	// The first creation fails at once; the probes wait 1 s and then 2 s.
	if took := time.Since(start); took < 3*time.Second {
		t.Errorf("three creations failed within %s: the pool retries without backing off (%+v)", took, stat(p))
	}
	if s := stat(p); !strings.Contains(s.Error, "fake/bash is not present") {
		t.Errorf("stats do not say why: %+v", s)
	}
	text := logs.String()
	if n := strings.Count(text, "warm pool cannot start sandboxes"); n != 1 || !strings.Contains(text, "fake/bash is not present") ||
		!strings.Contains(text, `fix="mcp-code-runner images build bash"`) {
		t.Errorf("want the reason and the build command logged once, got %d times:\n%s", n, text)
	}
}

// TestPoolBacksOffAndRecovers fails creations a few times: the pool
// probes one at a time, the stats show the error, and once creation works
// it fills up and clears the error.
func TestPoolBacksOffAndRecovers(t *testing.T) {
	b := testutil.FakeBackend(t)
	var calls atomic.Int32
	b.SetBeforeCreate(func(context.Context, sandbox.Template) error {
		if calls.Add(1) <= 3 {
			return fmt.Errorf("%w: the fake is down", sandbox.ErrUnavailable)
		}
		return nil
	})
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}, CreateConcurrency: 4})
	waitStat(t, p, "failing", func(s pool.Stat) bool { return s.Failures >= 2 && strings.Contains(s.Error, "the fake is down") })
	waitStat(t, p, "recovered and full", func(s pool.Stat) bool { return s.Idle == 2 && s.Error == "" })
	if s := stat(p); s.Failures != 3 {
		t.Errorf("failures %d, want 3: %+v", s.Failures, s)
	}
}

// TestDrainedPoolIsBusy: with no waiting allowed, a run that finds the pool
// empty gets a busy error rather than a shared sandbox.
func TestDrainedPoolIsBusy(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxWaiters: 1, WaitTimeout: 10 * time.Millisecond})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error { <-ctx.Done(); return ctx.Err() })
	first, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(first)
	_, err = p.Get(context.Background(), "bash")
	if !errors.Is(err, pool.ErrBusy) || !strings.Contains(err.Error(), "retry") {
		t.Fatalf("got %v, want a busy error", err)
	}
}

// TestPoolReplacesDeadIdleSandbox kills an idle sandbox from outside: the
// pool notices, counts it replaced and refills.
func TestPoolReplacesDeadIdleSandbox(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	ids := b.Live()
	if len(ids) != 1 || !b.Kill(ids[0], false) {
		t.Fatalf("live sandboxes %v", ids)
	}
	waitStat(t, p, "the dead one replaced", func(s pool.Stat) bool { return s.Replaced == 1 && s.Idle == 1 && s.Created == 2 })
	sb, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(sb)
	if sb.ID() == ids[0] {
		t.Fatal("the pool handed out the dead sandbox")
	}
	if got := runOn(t, sb, "echo alive"); got != "alive\n" {
		t.Errorf("stdout %q", got)
	}
}

// TestPoolReplacesOldIdleSandboxes: a sandbox idle longer than MaxIdle is
// replaced.
func TestPoolReplacesOldIdleSandboxes(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxIdle: time.Millisecond})
	waitStat(t, p, "one replaced for its age", func(s pool.Stat) bool { return s.Replaced >= 1 })
}

// lendOne returns a full pool of size with RefillDelay delay, and a
// sandbox taken from it.
func lendOne(t *testing.T, size int, delay time.Duration) (*pool.Pool, sandbox.Sandbox) {
	t.Helper()
	return lendOneWith(t, pool.Options{Sizes: map[string]int{"bash": size}, RefillDelay: delay})
}

// lendOneWith returns a full pool made with opts (one key, bash), and a
// sandbox taken from it.
func lendOneWith(t *testing.T, opts pool.Options) (*pool.Pool, sandbox.Sandbox) {
	t.Helper()
	size := opts.Sizes["bash"]
	p := fakePool(t, testutil.FakeBackend(t), opts)
	waitStat(t, p, "full", func(s pool.Stat) bool { return s.Idle == size })
	sb, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	return p, sb
}

// TestRefillWaitsForTheRun checks when a sandbox handed out is replaced:
// while others of its key are idle, after its run ends (so that the
// creation does not compete with the run) or RefillDelay; when it was the
// last one, at once.
func TestRefillWaitsForTheRun(t *testing.T) {
	t.Run("others idle: after the run", func(t *testing.T) {
		p, sb := lendOne(t, 2, time.Hour)
		// The deferral is recorded before Get returns, and with it the fill
		// loop needs nothing: no creation can have begun or begin.
		if s := stat(p); s.Deferred != 1 || s.Creating != 0 || s.Idle != 1 {
			t.Errorf("during the run: want 1 idle, 1 deferred, none creating; got %+v", s)
		}
		p.Release(sb)
		waitStat(t, p, "refilled after the run", func(s pool.Stat) bool { return s.Idle == 2 && s.Deferred == 0 })
	})
	t.Run("others idle: at most the delay", func(t *testing.T) {
		p, sb := lendOne(t, 2, time.Millisecond)
		defer p.Release(sb)
		waitStat(t, p, "refilled while the sandbox is still out", func(s pool.Stat) bool { return s.Idle == 2 && s.Deferred == 0 })
	})
	t.Run("the last one: at once", func(t *testing.T) {
		p, sb := lendOne(t, 1, time.Hour)
		defer p.Release(sb)
		if s := stat(p); s.Deferred != 0 {
			t.Errorf("the last sandbox's replacement was deferred: %+v", s)
		}
		waitStat(t, p, "replacement made while the sandbox is out", func(s pool.Stat) bool { return s.Idle == 1 })
	})
}

// TestAReleasedSandboxLeavesTheAnswerItsGrace checks what waits for
// ReleaseGrace once a run ends: its sandbox's removal always; its
// replacement's creation only while others of its key are idle.
func TestAReleasedSandboxLeavesTheAnswerItsGrace(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		grace time.Duration
		// during: the pool's state right after Release; after: what it
		// comes to.
		during, after func(pool.Stat) bool
		want          string
	}{
		{
			name: "others idle: removal and replacement both wait", size: 2, grace: time.Hour,
			during: func(s pool.Stat) bool { return s.Removing == 1 && s.Deferred == 1 && s.Creating == 0 && s.Idle == 1 },
			after:  func(s pool.Stat) bool { return s.Removing == 1 && s.Deferred == 1 && s.Idle == 1 },
			want:   "1 idle, 1 deferred, 1 being removed, none creating",
		},
		{
			name: "others idle: both go once the grace is over", size: 2, grace: time.Millisecond,
			after: func(s pool.Stat) bool { return s.Removing == 0 && s.Deferred == 0 && s.Idle == 2 },
			want:  "2 idle, none deferred or being removed",
		},
		{
			name: "the last one: replaced at once, removed after the grace", size: 1, grace: time.Hour,
			after: func(s pool.Stat) bool { return s.Removing == 1 && s.Deferred == 0 && s.Idle == 1 },
			want:  "1 idle, none deferred, 1 being removed",
		},
		{
			name: "no grace: removed and replaced at once", size: 2,
			after: func(s pool.Stat) bool { return s.Removing == 0 && s.Deferred == 0 && s.Idle == 2 },
			want:  "2 idle, none deferred or being removed",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, sb := lendOneWith(t, pool.Options{Sizes: map[string]int{"bash": tt.size}, RefillDelay: time.Hour, ReleaseGrace: tt.grace})
			p.Release(sb)
			// Release settles the deferral and counts the removal before it
			// returns: what it leaves waiting is visible at once.
			if s := stat(p); tt.during != nil && !tt.during(s) {
				t.Errorf("right after Release: want %s; got %+v", tt.want, s)
			}
			waitStat(t, p, tt.want, tt.after)
			// A removal still in its grace goes at once when the pool
			// closes: Close waits for it, well within the hour.
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := p.Close(ctx); err != nil {
				t.Errorf("Close with a removal in its grace: %v", err)
			}
			if s := stat(p); s.Removing != 0 {
				t.Errorf("after Close: %d still being removed", s.Removing)
			}
		})
	}
}

// TestCloseRemovesEverything closes a pool with idle sandboxes, one out
// and creations under way: nothing is left once Close returns and the
// sandbox out is released.
func TestCloseRemovesEverything(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := pool.New(b, map[string]sandbox.Template{"bash": bashTemplate}, pool.Options{Sizes: map[string]int{"bash": 3}, MaxWaiters: 1, WaitTimeout: time.Minute})
	testutil.Eventually(t, 30*time.Second, func() bool { return stat(p).Idle == 3 }, "3 idle")
	// The replacement of the sandbox taken next is under way at Close.
	var once sync.Once
	slow := make(chan struct{})
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error {
		once.Do(func() { close(slow) })
		<-ctx.Done()
		return ctx.Err()
	})
	out, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-slow:
	case <-time.After(30 * time.Second):
		t.Fatal("no replacement began within 30 s of taking a sandbox")
	}
	p.Release(out)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if created, removed, live := b.Counts(); live != 0 || created != removed {
		t.Errorf("after Close: created %d, removed %d, live %d", created, removed, live)
	}
}

func TestASandboxCountsIdleOnlyOnceItsAgentSaysItIsReady(t *testing.T) {
	b := testutil.FakeBackend(t)
	boot := make(chan struct{})
	b.SetBeforeAgent(func(string) error { <-boot; return nil })
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}})
	released := false
	release := func() {
		if !released {
			released = true
			close(boot)
		}
	}
	t.Cleanup(release) // before the pool's Close, which waits for the boot
	testutil.Eventually(t, 30*time.Second, func() bool { created, _, _ := b.Counts(); return created == 1 }, "the sandbox created")
	if s := stat(p); s.Idle != 0 || s.Creating != 1 {
		t.Fatalf("while its agent boots the sandbox is idle: %+v; want it still being made", s)
	}
	release()
	waitStat(t, p, "1 idle once ready", func(s pool.Stat) bool { return s.Idle == 1 && s.Creating == 0 })
	sb, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	defer p.Release(sb)
	if got := runOn(t, sb, "echo ready"); got != "ready\n" {
		t.Errorf("run: %q", got)
	}
}

func TestASandboxWhoseAgentFailsAtBootIsAFailedCreation(t *testing.T) {
	b := testutil.FakeBackend(t)
	var boots atomic.Int64
	b.SetBeforeAgent(func(string) error {
		if boots.Add(1) == 1 {
			return errors.New("agent cannot start")
		}
		return nil
	})
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}})
	waitStat(t, p, "one failure, then 1 idle", func(s pool.Stat) bool { return s.Failures >= 1 && s.Idle == 1 })
	if _, removed, live := b.Counts(); removed < 1 || live != 1 {
		t.Errorf("the sandbox that failed at boot: removed %d, live %d; want it removed and one live", removed, live)
	}
}

// TestHeldPoolMakesNothingUntilWokenThenFills: a pool whose image is still
// being built makes no sandbox and logs no failure; a run that asks for one
// is told why at once; Wake (the image is built) fills it.
func TestHeldPoolMakesNothingUntilWokenThenFills(t *testing.T) {
	b := testutil.FakeBackend(t)
	var creates atomic.Int32
	b.SetBeforeCreate(func(context.Context, sandbox.Template) error { creates.Add(1); return nil })
	var logs lockedBuffer
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}, Held: map[string]bool{"bash": true},
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	_, err := p.Get(context.Background(), "bash")
	if !errors.Is(err, sandbox.ErrImageMissing) || !strings.Contains(err.Error(), "still being built") {
		t.Fatalf("Get on a held pool = %v, want the missing image error saying it is being built", err)
	}
	if n := creates.Load(); n != 0 {
		t.Fatalf("a held pool created %d sandboxes", n)
	}
	p.Wake("bash")
	waitStat(t, p, "filled once woken", func(s pool.Stat) bool { return s.Idle == 2 })
	if s := stat(p); s.Failures != 0 || strings.Contains(logs.String(), "cannot start") {
		t.Errorf("a held pool reported failures: %+v\n%s", s, logs.String())
	}
}

// TestWakeRetriesAFailingPoolAtOnce: a pool that failed for want of its
// image, backing off, tries again the moment Wake says the image is built.
func TestWakeRetriesAFailingPoolAtOnce(t *testing.T) {
	b := testutil.FakeBackend(t)
	var built atomic.Bool
	b.SetBeforeCreate(func(context.Context, sandbox.Template) error {
		if !built.Load() {
			return fmt.Errorf("%w: image fake/bash is not present", sandbox.ErrImageMissing)
		}
		return nil
	})
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}})
	// Four failures: the back-off is 1 s, 2 s, 4 s, then 8 s until the next probe.
	waitStat(t, p, "four failures", func(s pool.Stat) bool { return s.Failures >= 4 && s.Creating == 0 })
	built.Store(true)
	woken := time.Now()
	p.Wake("bash")
	waitStat(t, p, "filled", func(s pool.Stat) bool { return s.Idle == 1 })
	if took := time.Since(woken); took > 4*time.Second {
		t.Errorf("the pool filled %s after Wake: it waited out its back-off", took)
	}
}

// A run waiting for a sandbox whose context ends says why it ended: a
// server stopping at the end of its grace period cancels its runs with a
// cause, which is then the run's answer, not the client's doing.
func TestAWaiterWhoseRequestEndsSaysWhy(t *testing.T) {
	b := testutil.FakeBackend(t)
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error {
		<-ctx.Done()
		return ctx.Err()
	})
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, CreateConcurrency: 1})
	stopping := errors.New("the server is stopping")
	ctx, cancel := context.WithCancelCause(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := p.Get(ctx, "bash")
		got <- err
	}()
	waitStat(t, p, "1 run waiting", func(s pool.Stat) bool { return s.Waiting == 1 })
	cancel(stopping)
	err := <-got
	if !errors.Is(err, pool.ErrBusy) || !strings.Contains(err.Error(), stopping.Error()) {
		t.Fatalf("Get = %v; want ErrBusy saying %q", err, stopping)
	}
}

// A stopping server drains its pool: the idle sandboxes go at once, none
// is made to stay idle, and a run that still comes gets one made for it.
func TestADrainedPoolKeepsNoSandboxIdleButServesTheRunsThatCome(t *testing.T) {
	b := testutil.FakeBackend(t)
	clock := newFakeClock()
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}, Clock: clock})
	waitStat(t, p, "2 idle", func(s pool.Stat) bool { return s.Idle == 2 })
	p.Drain()
	testutil.Eventually(t, 30*time.Second, func() bool { _, _, live := b.Counts(); return live == 0 }, "the idle sandboxes removed")
	sb, err := p.Get(context.Background(), "bash")
	if err != nil {
		t.Fatal(err)
	}
	if got := runOn(t, sb, "echo served"); got != "served\n" {
		t.Fatalf("the run made for a drained pool printed %q", got)
	}
	p.Release(sb)
	testutil.Eventually(t, 30*time.Second, func() bool { _, _, live := b.Counts(); return live == 0 }, "the run's sandbox removed")
	// Nothing is made to stay idle afterwards: two checks of the fill loop
	// (the second a barrier for the first) make nothing.
	created, _, _ := b.Counts()
	clock.Tick(t, time.Second)
	clock.Tick(t, time.Second)
	if s := stat(p); s.Idle != 0 || s.Creating != 0 {
		t.Fatalf("after the run, the drained pool has %+v; want nothing idle or being made", s)
	}
	if now, _, _ := b.Counts(); now != created {
		t.Fatalf("the drained pool made %d sandboxes after its run; want none", now-created)
	}
}
