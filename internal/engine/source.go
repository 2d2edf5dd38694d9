package engine

import (
	"context"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// source is where a run's sandbox comes from and goes back to: the warm
// pool, a sandbox made for the run (cold), or a sandbox the caller holds (a
// session's).
type source interface {
	// acquire returns a sandbox for the run.
	acquire(ctx context.Context) (sandbox.Sandbox, error)
	// exec runs the job on sb.
	exec(ctx context.Context, sb sandbox.Sandbox, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error)
	// release gives sb back once the run is done with it.
	release(sb sandbox.Sandbox, r *run)
	// warm says the sandboxes were made ahead of the run (and one that
	// died idle may be replaced); timed says the observer times acquire.
	warm() bool
	timed() bool
}

// source picks the run's source: the given sandbox; a cold one when the
// run has network or packages (no warm sandbox has either) or its
// language has no pool; else the pool.
func (e *Engine) source(r *run, given sandbox.Sandbox) source {
	lang := r.plan.Language
	switch {
	case given != nil:
		return held{given}
	case r.proxy == nil && r.inst == nil && r.plan.Isolation.Or() == e.isolation() && e.pool != nil && e.pool.Has(lang.Name):
		return pooled{e.pool, lang}
	}
	// The pool's sandboxes are of the operator's isolation; a run that
	// asked for a stronger one gets a sandbox made for it.
	t := e.Template(lang)
	t.Isolation = r.plan.Isolation.Or()
	if r.proxy != nil {
		t.Egress = r.proxy
	}
	if r.inst != nil {
		t.Mounts = append(t.Mounts, r.inst.Mount())
	}
	return cold{e, t}
}

// pooled hands out the warm pool's sandboxes, one run each.
type pooled struct {
	pool *pool.Pool
	lang languages.Language
}

func (p pooled) acquire(ctx context.Context) (sandbox.Sandbox, error) {
	return p.pool.Get(ctx, p.lang.Name)
}

func (p pooled) exec(ctx context.Context, sb sandbox.Sandbox, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	return sb.Exec(ctx, job, onChunk)
}

// release hands sb back to the pool, which removes it in the background;
// it is never reused.
func (p pooled) release(sb sandbox.Sandbox, _ *run) { p.pool.Release(sb) }
func (pooled) warm() bool                           { return true }
func (pooled) timed() bool                          { return true }

// cold makes a sandbox of its template for the run.
type cold struct {
	e *Engine
	t sandbox.Template
}

func (c cold) acquire(ctx context.Context) (sandbox.Sandbox, error) {
	return c.e.backend.Create(ctx, c.t)
}

func (c cold) exec(ctx context.Context, sb sandbox.Sandbox, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	return sb.Exec(ctx, job, onChunk)
}

// release removes sb after the run has answered, holding the run's slot
// until it is gone.
func (c cold) release(sb sandbox.Sandbox, r *run) {
	c.e.removeLater(sb, r.slot)
	r.slot = nil
}
func (cold) warm() bool  { return false }
func (cold) timed() bool { return true }

// held is a sandbox the caller holds for many calls (a session's): the run
// calls it, and it stays the caller's.
type held struct{ sb sandbox.Sandbox }

func (h held) acquire(context.Context) (sandbox.Sandbox, error) { return h.sb, nil }

func (held) exec(ctx context.Context, sb sandbox.Sandbox, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	return sb.Call(ctx, job, onChunk)
}
func (held) release(sandbox.Sandbox, *run) {}
func (held) warm() bool                    { return false }
func (held) timed() bool                   { return false }

// HeldLife is the MaxLife of a sandbox that a caller holds for many runs
// (RunOn) during life, under the limits lim: it may outlive life by one
// run.
func HeldLife(lim config.Limits, life time.Duration) time.Duration {
	return life + time.Duration(lim.MaxTimeoutSeconds)*time.Second + deadlineGrace
}

// NewSandbox makes a sandbox of t for lang that the caller holds (see
// HeldLife and RunOn) and closes; an error says what to do.
func (e *Engine) NewSandbox(ctx context.Context, lang languages.Language, t sandbox.Template) (sandbox.Sandbox, error) {
	if err := e.awaitImage(ctx, e.reg.ImageOf(lang), lang, nil); err != nil {
		return nil, err
	}
	sb, err := e.backend.Create(ctx, t)
	if err != nil {
		return nil, e.explain(err, lang)
	}
	return sb, nil
}

// removeLater removes a cold run's sandbox after the run has answered:
// the removal (about 40 ms of Docker API calls here) is off the run's
// latency. The run slot stays taken until the container is gone, so no
// more sandboxes exist than max_concurrent_runs allows, and Wait waits for
// the removal as for a run.
func (e *Engine) removeLater(sb sandbox.Sandbox, slot func()) {
	e.inflight.Add(1)
	e.removals.Add(1)
	go func() {
		defer e.inflight.Done()
		defer e.removals.Done()
		sb.Close()
		if slot != nil {
			slot()
		}
	}()
}
