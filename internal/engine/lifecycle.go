package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// RunInfo describes a run in flight.
type RunInfo struct {
	RunID    string
	Language string
	// Owner is the name of the principal whose run it is.
	Owner   string
	Started time.Time
}

// Inflight lists the runs in flight.
func (e *Engine) Inflight() []RunInfo {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	out := make([]RunInfo, 0, len(e.runs))
	for _, r := range e.runs {
		out = append(out, r)
	}
	return out
}

// ErrStopped is why CancelAll ends the runs in flight: what waits for a
// run slot or a sandbox says so rather than blame its caller.
var ErrStopped = errors.New("the server is stopping and its grace period for the runs in flight has ended")

// CancelAll cancels every run in flight: each sandbox is killed (a session's
// call is stopped) and each result says the run was killed.
func (e *Engine) CancelAll() int {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	for _, cancel := range e.cancels {
		cancel(ErrStopped)
	}
	return len(e.cancels)
}

// Wait blocks until every run in flight has returned (its sandbox removed),
// or ctx ends. Callers cancel the runs' contexts first to stop them.
func (e *Engine) Wait(ctx context.Context) error {
	done := make(chan struct{})
	go func() { e.inflight.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("runs still in flight at shutdown: %w", ctx.Err())
	}
}

// StartPool starts the warm pool for every language with a pool size.
func (e *Engine) StartPool() {
	templates := map[string]sandbox.Template{}
	sizes, maxSizes := map[string]int{}, map[string]int{}
	held := map[string]bool{}
	for _, l := range e.reg.Languages() {
		if state, _ := e.imageBuild(l); state != "" {
			held[l.Name] = true // started by imageBuilt
		}
		t := e.Template(l)
		if len(l.Prestart) > 0 {
			// Only warm sandboxes: a cold one gets its job at once, and a
			// server started beside the compile would only compete with it.
			t.Prestart = &wire.Prestart{Argv: l.Prestart, Env: l.Env}
		}
		switch {
		case l.Warm != nil && !wire.HasWarmProgram(l.Warm.Name):
			e.log.Error("language registry: unknown warm program; the language's warm sandboxes start no interpreter ahead",
				"language", l.Name, "warm", l.Warm.Name)
		case l.Warm != nil && l.Warm.Name == wire.ScriptWarm:
			t.Warm = &wire.Warm{Name: l.Warm.Name, Argv: l.Run, Env: l.Env, Replaces: l.Run, Script: l.File}
		case l.Warm != nil:
			t.Warm = &wire.Warm{Name: l.Warm.Name, Argv: l.Warm.Run, Env: l.Env, Replaces: l.Run}
		}
		templates[l.Name] = t
		sizes[l.Name] = e.cfg.Pool.SizeFor(l.Name)
		maxSizes[l.Name] = e.cfg.Pool.MaxSizeFor(l.Name)
	}
	e.pool = pool.New(e.backend, templates, pool.Options{
		Sizes:             sizes,
		MaxSizes:          maxSizes,
		ShrinkAfter:       time.Duration(e.cfg.Pool.ShrinkAfterSeconds) * time.Second,
		CanGrow:           pool.HostHeadroom(e.cfg.Pool.ReserveMemoryMB, e.cfg.Pool.ReservePids),
		MaxWaiters:        e.cfg.Pool.MaxWaiters,
		WaitTimeout:       e.cfg.QueueTimeout(),
		MaxIdle:           time.Duration(e.cfg.Pool.MaxIdleSeconds) * time.Second,
		CreateConcurrency: e.cfg.Pool.CreateConcurrency,
		RefillDelay:       time.Duration(e.cfg.Pool.RefillDelayMs) * time.Millisecond,
		ReleaseGrace:      time.Duration(e.cfg.Pool.ReleaseGraceMs) * time.Millisecond,
		Logger:            e.log,
		Held:              held,
	})
}

// PoolStats returns the warm pool's state; nil without a pool.
func (e *Engine) PoolStats() []pool.Stat {
	if e.pool == nil {
		return nil
	}
	return e.pool.Stats()
}

// DrainPool makes the warm pool keep no idle sandboxes from now on (see
// pool.Pool.Drain): the server is stopping, and runs still in flight or
// queued get theirs made for them.
func (e *Engine) DrainPool() {
	if e.pool != nil {
		e.pool.Drain()
	}
}

// Close stops the warm pool and removes its sandboxes, and waits for the
// removal of cold runs' sandboxes, at most until ctx ends. Runs in flight
// should have ended first (see Wait).
func (e *Engine) Close(ctx context.Context) error {
	var err error
	if e.pool != nil {
		err = e.pool.Close(ctx)
	}
	done := make(chan struct{})
	go func() { e.removals.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		err = errors.Join(err, fmt.Errorf("sandbox removals still running at shutdown: %w", ctx.Err()))
	}
	return err
}
