package pool_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// fakeClock is a pool's time that the test moves: Now is what the test set,
// and each Tick delivers one tick to every ticker, waiting until each pool
// has taken it.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	tickers []chan time.Time
}

func newFakeClock() *fakeClock { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTicker(time.Duration) (<-chan time.Time, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch := make(chan time.Time) // unbuffered: a send returns once a pool took it
	c.tickers = append(c.tickers, ch)
	return ch, func() {}
}

// Tick moves the clock by d and delivers a tick. A pool takes the next tick
// only after it has acted on the one before, so ticking twice is a barrier
// for the first.
func (c *fakeClock) Tick(t *testing.T, d time.Duration) {
	t.Helper()
	c.mu.Lock()
	c.now = c.now.Add(d)
	now, tickers := c.now, c.tickers
	c.mu.Unlock()
	for _, ch := range tickers {
		select {
		case ch <- now:
		case <-time.After(30 * time.Second):
			t.Fatal("the pool did not take the clock's tick")
		}
	}
}

// drain takes n sandboxes of the pool at once, as n concurrent runs would,
// and returns them once all have one. Creations wait until every run has a
// sandbox or waits for one, so that what waits does not depend on how fast
// sandboxes are made.
func drain(t *testing.T, p *pool.Pool, b *fake.Backend, n int) []sandbox.Sandbox {
	t.Helper()
	gate := make(chan struct{})
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	var mu sync.Mutex
	var out []sandbox.Sandbox
	done := make(chan struct{}, n)
	for range n {
		go func() {
			defer func() { done <- struct{}{} }()
			sb, err := p.Get(context.Background(), "bash")
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			out = append(out, sb)
			mu.Unlock()
		}()
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(out)+stat(p).Waiting == n
	}, "every run served or waiting")
	close(gate)
	for range n {
		<-done
	}
	b.SetBeforeCreate(nil)
	if len(out) != n {
		t.Fatalf("%d of %d runs got a sandbox", len(out), n)
	}
	return out
}

func releaseAll(p *pool.Pool, sbs []sandbox.Sandbox) {
	for _, sb := range sbs {
		p.Release(sb)
	}
}

// TestPoolGrowsWhileRunsWaitAndShrinksWhenIdle: runs that find the pool
// empty grow it (one sandbox each, up to its maximum), the grown pool
// refills to its new size, and once it has gone the shrink period without
// running dry it shrinks back to its configured size, one sandbox per check.
func TestPoolGrowsWhileRunsWaitAndShrinksWhenIdle(t *testing.T) {
	b := testutil.FakeBackend(t)
	clock := newFakeClock()
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxSizes: map[string]int{"bash": 4},
		ShrinkAfter: time.Minute, Clock: clock})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })

	// 1 served from the pool, 5 wait: the pool grows to its maximum, 4.
	releaseAll(p, drain(t, p, b, 6))
	waitStat(t, p, "grown to 4 and full", func(s pool.Stat) bool { return s.Size == 4 && s.Idle == 4 })
	if s := stat(p); s.Waited != 5 || s.Base != 1 || s.MaxSize != 4 || s.GrowBlocked != "" {
		t.Errorf("stat %+v: want 3 or more runs that waited, base 1, max 4, nothing blocking", s)
	}

	// Not yet idle for the shrink period: no change.
	clock.Tick(t, 59*time.Second)
	clock.Tick(t, 0)
	if s := stat(p); s.Size != 4 {
		t.Fatalf("shrank before the shrink period: %+v", s)
	}
	// Past it: one sandbox per check, down to the configured size.
	for want := 3; want >= 1; want-- {
		clock.Tick(t, 2*time.Second)
		waitStat(t, p, fmt.Sprintf("shrunk to %d", want), func(s pool.Stat) bool { return s.Size == want && s.Idle == want })
	}
	clock.Tick(t, 2*time.Second)
	clock.Tick(t, 0)
	if s := stat(p); s.Size != 1 {
		t.Errorf("shrank below its configured size: %+v", s)
	}
}

// TestBusyPoolDoesNotShrink: a pool whose sandboxes are all in use at once,
// even with no run waiting, is just large enough for its load, and keeps its
// size for another shrink period.
func TestBusyPoolDoesNotShrink(t *testing.T) {
	b := testutil.FakeBackend(t)
	clock := newFakeClock()
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxSizes: map[string]int{"bash": 3},
		ShrinkAfter: time.Minute, Clock: clock})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	releaseAll(p, drain(t, p, b, 3))
	waitStat(t, p, "grown to 3 and full", func(s pool.Stat) bool { return s.Size == 3 && s.Idle == 3 })

	clock.Tick(t, 50*time.Second)
	waited := stat(p).Waited
	releaseAll(p, drain(t, p, b, 3)) // all three in use at once, none waiting
	if s := stat(p); s.Waited != waited {
		t.Errorf("runs that waited: %d, want only the first burst's %d", s.Waited, waited)
	}
	waitStat(t, p, "full again", func(s pool.Stat) bool { return s.Idle == 3 })
	clock.Tick(t, 50*time.Second) // a minute and more since the first burst, not since the second
	clock.Tick(t, 0)
	if s := stat(p); s.Size != 3 {
		t.Errorf("shrank though all its sandboxes were in use 50 s ago: %+v", s)
	}
}

// TestPoolThatCannotGrowStaysAndSaysWhy: when CanGrow refuses, runs still
// wait for the pool's own sandboxes, the pool keeps its size, and its stat
// says why; once growing is possible again, it grows and the reason goes.
func TestPoolThatCannotGrowStaysAndSaysWhy(t *testing.T) {
	b := testutil.FakeBackend(t)
	var refuse atomic.Bool
	refuse.Store(true)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxSizes: map[string]int{"bash": 4},
		Clock: newFakeClock(), CanGrow: func(tmpl sandbox.Template) error {
			if tmpl.Purpose != "bash" {
				t.Errorf("asked about template %+v", tmpl)
			}
			if refuse.Load() {
				return errors.New("memory: 900 MiB available")
			}
			return nil
		}})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	releaseAll(p, drain(t, p, b, 3))
	s := stat(p)
	if s.Size != 1 || !strings.Contains(s.GrowBlocked, "memory: 900 MiB available") || !strings.Contains(s.GrowBlocked, "stays at 1 of at most 4") {
		t.Errorf("stat %+v: want size 1 and the reason it cannot grow", s)
	}
	refuse.Store(false)
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	releaseAll(p, drain(t, p, b, 2))
	waitStat(t, p, "grown to 2 and full", func(s pool.Stat) bool { return s.Size == 2 && s.Idle == 2 })
	if s := stat(p); s.GrowBlocked != "" {
		t.Errorf("the reason stays after the pool grew: %+v", s)
	}
}

// TestBurstAfterGrowthNeedsNoCreation: a burst of 50 concurrent runs grows
// a pool of 2 to 50; once it has refilled, a second burst of 50 is served
// entirely from sandboxes made ahead, none waiting for a creation.
func TestBurstAfterGrowthNeedsNoCreation(t *testing.T) {
	b := testutil.FakeBackend(t)
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 2}, MaxSizes: map[string]int{"bash": 50},
		MaxWaiters: 64, CreateConcurrency: 8, Clock: newFakeClock()})
	waitStat(t, p, "2 idle", func(s pool.Stat) bool { return s.Idle == 2 })
	releaseAll(p, drain(t, p, b, 50))
	waitStat(t, p, "grown to 50 and full", func(s pool.Stat) bool { return s.Size == 50 && s.Idle == 50 })
	first := stat(p).Waited
	releaseAll(p, drain(t, p, b, 50))
	if s := stat(p); s.Waited != first {
		t.Errorf("%d runs of the second burst waited for a sandbox to be made: %+v", s.Waited-first, s)
	}
}

// TestPoolDoesNotShrinkWhileRunsWait: runs still waiting for sandboxes
// (creations slower than the shrink period) keep a grown pool from
// shrinking, however long ago its load last came to its size.
func TestPoolDoesNotShrinkWhileRunsWait(t *testing.T) {
	b := testutil.FakeBackend(t)
	clock := newFakeClock()
	p := fakePool(t, b, pool.Options{Sizes: map[string]int{"bash": 1}, MaxSizes: map[string]int{"bash": 3},
		ShrinkAfter: time.Minute, Clock: clock})
	waitStat(t, p, "1 idle", func(s pool.Stat) bool { return s.Idle == 1 })
	gate := make(chan struct{})
	b.SetBeforeCreate(func(ctx context.Context, _ sandbox.Template) error {
		select {
		case <-gate:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	got := make(chan sandbox.Sandbox, 4)
	for range 4 {
		go func() {
			sb, err := p.Get(context.Background(), "bash")
			if err != nil {
				t.Error(err)
			}
			got <- sb
		}()
	}
	waitStat(t, p, "grown to 3, 3 runs waiting", func(s pool.Stat) bool { return s.Size == 3 && s.Waiting == 3 })
	p.Release(<-got) // the one served at once ends: the load falls below the size
	clock.Tick(t, 2*time.Minute)
	clock.Tick(t, 0)
	if s := stat(p); s.Size != 3 {
		t.Errorf("shrank while runs waited: %+v", s)
	}
	close(gate)
	for range 3 {
		if sb := <-got; sb != nil {
			p.Release(sb)
		}
	}
	b.SetBeforeCreate(nil)
}
