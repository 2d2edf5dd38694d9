package engine

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// RunOptions carry per-call hooks.
type RunOptions struct {
	// OnChunk, if set, sees output as it arrives.
	OnChunk func(sandbox.Chunk)
	// Long raises the time limits to those of executions that outlive a
	// request: timeout_seconds may go up to the executions' maximum
	// duration, which is also the default.
	Long bool
	// Release, if set, is a run slot the caller already holds (see
	// Reserve); Run releases it when done instead of taking its own.
	Release *Slot
	// QueueWait is how long the caller waited for Release's slot, for the
	// observer.
	QueueWait time.Duration
	// Env is more environment for the stages, from the server: a
	// session's packages and proxy.
	Env []string
	// Proxy, if set, is the session's egress proxy, whose report the
	// result carries.
	Proxy *egress.Proxy
	// Files go into the workspace with every job, from the server: the
	// CA bundle of a session with secrets.
	Files []wire.File
	// OnImage, if set, hears where the build of the run's image stands
	// while the run waits for it ("building image for rust: step 4/9"; see
	// SetImageBuilds).
	OnImage func(status string)
	// OnSandbox, if set, hears the sandbox the run's job goes to once it
	// has one (again if the job moves to another), for the operator
	// console's reading of its memory use.
	OnSandbox func(sandbox.Sandbox)
}

// Run prepares req and runs it in a fresh sandbox: Prepare, then RunPlan.
// A rejected request or a sandbox that could not run returns an *Error.
func (e *Engine) Run(ctx context.Context, req Request, opts RunOptions) (*Result, error) {
	if req.SessionID != "" {
		return nil, invalid("session_id %q: this path runs one-shot code only; session runs go through the session manager", req.SessionID)
	}
	plan, err := e.prepare(ctx, req, opts)
	if err != nil {
		return nil, err
	}
	return e.RunPlan(ctx, plan, opts)
}

// RunPlan runs a one-shot plan in a sandbox of its own: a warm one from the
// pool, or one made for the run.
func (e *Engine) RunPlan(ctx context.Context, plan *Plan, opts RunOptions) (*Result, error) {
	if plan.Session {
		return nil, invalid("a session's call runs in the session's sandbox; the session manager runs it")
	}
	return e.run(ctx, plan, opts, nil)
}

// RunOn runs a plan on a sandbox the caller holds (a session's): files
// persist, and for a language with a kernel (and no stdin or args) the code
// runs as a cell of the sandbox's long-lived interpreter.
func (e *Engine) RunOn(ctx context.Context, sb sandbox.Sandbox, plan *Plan, opts RunOptions) (*Result, error) {
	if !plan.Session {
		return nil, invalid("a one-shot plan runs in a sandbox of its own; PrepareInSession makes a plan for a held sandbox")
	}
	return e.run(ctx, plan, opts, sb)
}

// run takes a plan through the four steps of every run: a run slot, the
// job with its packages and network, a sandbox from its source, the
// answer. A given sandbox (a session's) is the run's source.
func (e *Engine) run(ctx context.Context, plan *Plan, opts RunOptions, given sandbox.Sandbox) (res *Result, err error) {
	e.inflight.Add(1)
	defer e.inflight.Done()
	r := newRun(ctx, plan, opts, given != nil)
	defer func() { e.obs.RunDone(ctx, r.done(res, err)) }()
	defer r.release()
	// The image first, without a run slot: a wait of minutes for a build
	// must not hold one that other languages' runs could use.
	if given == nil {
		if err := e.awaitImage(ctx, e.reg.ImageOf(plan.Language), plan.Language, opts.OnImage); err != nil {
			return nil, err
		}
	}
	if err := e.queue(ctx, r); err != nil {
		return nil, err
	}
	ctx, untrack := e.track(ctx, r)
	defer untrack()
	if err := e.equip(ctx, r); err != nil {
		return nil, err
	}
	if r.proxy != nil && r.proxy != opts.Proxy {
		defer r.proxy.Close()
	}
	sres, err := e.execute(ctx, r, e.source(r, given))
	if err != nil {
		return nil, e.explain(err, plan.Language)
	}
	return e.answer(ctx, r, sres), nil
}

// run is one run's state on its way through the steps.
type run struct {
	plan      *Plan
	opts      RunOptions
	id        string
	owner     string
	start     time.Time
	stats     RunStats
	slot      func() // nil once given back or handed to the sandbox's removal
	unquota   func()
	job       sandbox.Job
	inst      *packages.Installation
	proxy     *egress.Proxy
	sandboxID string
}

// newRun starts a run of plan; a slot the caller holds (opts.Release) is
// the run's.
func newRun(ctx context.Context, plan *Plan, opts RunOptions, session bool) *run {
	r := &run{plan: plan, opts: opts, owner: principal.FromContext(ctx).Name, start: time.Now(),
		stats: RunStats{Session: session, QueueWait: opts.QueueWait, Language: plan.Language.Name}}
	if opts.Release != nil {
		r.slot, r.unquota = opts.Release.slot, opts.Release.quota
		r.stats.Reached |= StageQueued
	}
	return r
}

// release gives back the principal's quota (its next run need not wait for
// a removal) and the run slot, unless the cold sandbox's removal took it.
func (r *run) release() {
	if r.unquota != nil {
		r.unquota()
	}
	if r.slot != nil {
		r.slot()
	}
}

// done completes the run's stats for the observer.
func (r *run) done(res *Result, err error) RunStats {
	stats := r.stats
	stats.Total = time.Since(r.start)
	if res == nil {
		stats.Status = CodeOf(err)
		return stats
	}
	stats.Language, stats.Status = res.Language, res.Status
	stats.StdoutBytes, stats.StderrBytes = res.StdoutBytes, res.StderrBytes
	if res.Compile != nil {
		stats.StdoutBytes += res.Compile.StdoutBytes
		stats.StderrBytes += res.Compile.StderrBytes
	}
	return stats
}

// queue takes the run's slot unless the caller brought one.
func (e *Engine) queue(ctx context.Context, r *run) error {
	if r.slot != nil {
		return nil
	}
	queued := time.Now()
	held, err := e.acquire(ctx)
	r.stats.QueueWait = time.Since(queued)
	if err != nil {
		return err
	}
	r.slot, r.unquota = held.slot, held.quota
	r.stats.Reached |= StageQueued
	return nil
}

// track lists the run in flight, cancellable by CancelAll, until untrack.
func (e *Engine) track(ctx context.Context, r *run) (context.Context, func()) {
	r.id = newRunID()
	ctx, cancelRun := context.WithCancelCause(ctx)
	e.runsMu.Lock()
	e.runs[r.id] = RunInfo{RunID: r.id, Language: r.plan.Language.Name, Owner: r.owner, Started: r.start}
	e.cancels[r.id] = cancelRun
	e.runsMu.Unlock()
	return ctx, func() {
		e.runsMu.Lock()
		delete(e.runs, r.id)
		delete(e.cancels, r.id)
		e.runsMu.Unlock()
		cancelRun(nil)
	}
}

// equip builds the run's job and gives it its packages and network: the
// caller's environment (a session's), the packages installed for the run,
// the run's own egress proxy or the caller's.
func (e *Engine) equip(ctx context.Context, r *run) error {
	r.job = e.job(r.plan, r.id)
	if err := e.equipTools(ctx, r); err != nil {
		return err
	}
	addEnv(&r.job, r.opts.Env)
	r.job.Request.Files = append(r.job.Request.Files, r.opts.Files...)
	if len(r.plan.Packages) > 0 {
		inst, err := e.Install(ctx, r.plan.Language, r.plan.Packages, r.id)
		if err != nil {
			return err
		}
		r.inst = inst
		addEnv(&r.job, inst.Env())
	}
	proxy, env := e.gate.Proxy(ctx, r.plan.Network, r.plan.Language, r.id, r.plan.Secrets)
	addEnv(&r.job, env)
	if proxy != nil {
		env, files := e.gate.SecretsEnv(r.plan.Secrets)
		addEnv(&r.job, env)
		r.job.Request.Files = append(r.job.Request.Files, files...)
	}
	r.proxy = cmp.Or(proxy, r.opts.Proxy)
	return nil
}

// maxDeadRetries bounds how many more pool sandboxes a run tries when the
// one it took had died before its job reached it.
const maxDeadRetries = 2

// execute acquires a sandbox from src, runs the job on it and gives it
// back. A pool sandbox can die while idle a moment before the pool notices;
// the job never reached it, so it goes to another one.
func (e *Engine) execute(ctx context.Context, r *run, src source) (*sandbox.Result, error) {
	acquireStart := time.Now()
	sb, err := src.acquire(ctx)
	if src.timed() {
		r.stats.Acquire, r.stats.Warm = time.Since(acquireStart), src.warm()
	}
	if err != nil {
		return nil, err
	}
	if src.timed() {
		r.stats.Reached |= StageAcquired
	}
	r.heardSandbox(sb)
	execStart := time.Now()
	sres, err := src.exec(ctx, sb, r.job, r.opts.OnChunk)
	r.stats.Exec, r.stats.Reached = time.Since(execStart), r.stats.Reached|StageExecuted
	r.sandboxID = sb.ID()
	for retry := 0; src.warm() && errors.Is(err, sandbox.ErrDead) && retry < maxDeadRetries; retry++ {
		e.log.Warn("pool sandbox ended before its job; taking another", "run", r.id, "language", r.plan.Language.Name, "err", err)
		src.release(sb, r)
		if sb, err = src.acquire(ctx); err != nil {
			return nil, err
		}
		r.sandboxID = sb.ID()
		r.heardSandbox(sb)
		sres, err = src.exec(ctx, sb, r.job, r.opts.OnChunk)
	}
	src.release(sb, r)
	return sres, err
}

// heardSandbox tells the run's OnSandbox, if any, the sandbox its job
// goes to.
func (r *run) heardSandbox(sb sandbox.Sandbox) {
	if r.opts.OnSandbox != nil {
		r.opts.OnSandbox(sb)
	}
}

// answer shapes the sandbox's result into the run's, with its artifacts,
// packages and network report.
func (e *Engine) answer(ctx context.Context, r *run, sres *sandbox.Result) *Result {
	lang := r.plan.Language
	out := e.shape(r.id, r.owner, lang, sres, ctx.Err() != nil)
	out.Isolation = string(r.plan.Isolation.Or())
	out.SandboxID = r.sandboxID
	out.Artifacts = e.keepArtifacts(r.id, r.owner, sres.Artifacts)
	out.RuntimeVersion = e.runtimeVersion(ctx, lang)
	if r.inst != nil {
		out.Packages, out.PackagesCached = r.inst.Installed, r.inst.Cached
	}
	if r.proxy != nil {
		rep := r.proxy.Report()
		out.Network = &rep
		if d := gate.Denied(rep); d != "" && out.Status != StatusOK {
			out.ExitReason = strings.TrimSpace(out.ExitReason + " (" + d + ")")
		}
	}
	out.TotalMs = time.Since(r.start).Milliseconds()
	if r.plan.Session && !r.plan.Kernel && lang.Kernel != nil {
		out.ExitReason = strings.TrimSpace(out.ExitReason + " (ran as a script in the session's workspace because stdin or args were given; interpreter state was not used)")
	}
	e.log.Info("run finished", "run", r.id, "language", lang.Name, "status", out.Status,
		"exit_code", out.ExitCode, "duration_ms", out.DurationMs, "total_ms", out.TotalMs, "session", r.plan.Session)
	return out
}

// addEnv appends env to every stage of job, and to its kernel call.
func addEnv(job *sandbox.Job, env []string) {
	if len(env) == 0 {
		return
	}
	for i := range job.Request.Stages {
		job.Request.Stages[i].Env = append(job.Request.Stages[i].Env, env...)
	}
	if k := job.Request.Kernel; k != nil {
		k.Env = append(k.Env, env...)
	}
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
