package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
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
}

// Run validates req, runs it in a fresh sandbox and returns the result. A
// rejected request or a sandbox that could not run returns an *Error.
func (e *Engine) Run(ctx context.Context, req Request, opts RunOptions) (*Result, error) {
	if req.SessionID != "" {
		return nil, invalid("session_id %q: this path runs one-shot code only; session runs go through the session manager", req.SessionID)
	}
	return e.run(ctx, req, opts, nil)
}

// RunInSession runs req in a session's sandbox: files persist, and for a
// language with a kernel (and no stdin or args) the code runs as a cell of
// the session's long-lived interpreter.
func (e *Engine) RunInSession(ctx context.Context, sb sandbox.Sandbox, req Request, opts RunOptions) (*Result, error) {
	return e.run(ctx, req, opts, sb)
}

func (e *Engine) run(ctx context.Context, req Request, opts RunOptions, session sandbox.Sandbox) (res *Result, err error) {
	start := time.Now()
	e.inflight.Add(1)
	defer e.inflight.Done()
	// The language is named once validated: a request's own string is
	// not a metric label.
	stats := RunStats{Session: session != nil, QueueWait: opts.QueueWait}
	if opts.Release != nil {
		stats.Reached |= StageQueued
	}
	defer func() {
		stats.Total = time.Since(start)
		if res != nil {
			stats.Language, stats.Status = res.Language, res.Status
			stats.StdoutBytes, stats.StderrBytes = res.StdoutBytes, res.StderrBytes
			if res.Compile != nil {
				stats.StdoutBytes += res.Compile.StdoutBytes
				stats.StderrBytes += res.Compile.StderrBytes
			}
		} else {
			stats.Status = CodeOf(err)
		}
		e.obs.RunDone(ctx, stats)
	}()
	// The run slot: the caller's, or taken below; given back when the run
	// returns, or handed to the cold sandbox's removal (removeLater). The
	// principal's quota is given back when the run returns: its next run
	// need not wait for the removal.
	var slot, unquota func()
	if opts.Release != nil {
		slot, unquota = opts.Release.slot, opts.Release.quota
	}
	defer func() {
		if slot != nil {
			slot()
		}
	}()
	defer func() {
		if unquota != nil {
			unquota()
		}
	}()
	v, err := e.validate(req, opts.Long)
	if err != nil {
		return nil, err
	}
	if session != nil && req.Network != "" {
		return nil, invalid("network is chosen when the session is created (create_session's network); leave it out of a session's run_code")
	}
	if session != nil && len(req.Packages) > 0 {
		return nil, invalid("a session installs packages with install_packages (or create_session's packages); leave packages out of a session's run_code")
	}
	tier, err := e.checkNetwork(req.Network)
	if err != nil {
		return nil, err
	}
	if err := e.checkPackages(v.lang, req.Packages); err != nil {
		return nil, err
	}
	owner := principal.FromContext(ctx).Name
	lang := v.lang
	stats.Language = lang.Name

	if slot == nil {
		queued := time.Now()
		var held *Slot
		held, err = e.acquire(ctx)
		stats.QueueWait = time.Since(queued)
		if err != nil {
			return nil, err
		}
		slot, unquota = held.slot, held.quota
		stats.Reached |= StageQueued
	}

	runID := newRunID()
	ctx, cancelRun := context.WithCancel(ctx)
	defer cancelRun()
	e.runsMu.Lock()
	e.runs[runID] = RunInfo{RunID: runID, Language: lang.Name, Owner: owner, Started: start}
	e.cancels[runID] = cancelRun
	e.runsMu.Unlock()
	defer func() {
		e.runsMu.Lock()
		delete(e.runs, runID)
		delete(e.cancels, runID)
		e.runsMu.Unlock()
	}()
	job, useKernel := e.job(v, req, runID, session != nil)
	addEnv(&job, opts.Env)
	var inst *Installation
	if len(req.Packages) > 0 {
		if inst, err = e.Install(ctx, lang, req.Packages, runID); err != nil {
			return nil, err
		}
		addEnv(&job, inst.Env())
	}
	proxy := e.newProxy(e.Policy(tier, lang), runID)
	if proxy != nil {
		defer proxy.Close()
		addEnv(&job, proxyEnv())
	} else if opts.Proxy != nil {
		proxy = opts.Proxy
	}
	var sres *sandbox.Result
	var sandboxID string
	if session != nil {
		sandboxID = session.ID()
		execStart := time.Now()
		sres, err = session.Call(ctx, job, opts.OnChunk)
		stats.Exec, stats.Reached = time.Since(execStart), stats.Reached|StageExecuted
	} else {
		acquireStart := time.Now()
		var sb sandbox.Sandbox
		var warm bool
		var cerr error
		if proxy != nil || inst != nil {
			// A sandbox with network or packages is made for the run: no
			// warm sandbox has either.
			t := e.Template(lang)
			if proxy != nil {
				t.Egress = proxy
			}
			if inst != nil {
				t.Mounts = append(t.Mounts, inst.Mount())
			}
			sb, cerr = e.backend.Create(ctx, t)
		} else {
			sb, warm, cerr = e.sandbox(ctx, lang)
		}
		stats.Acquire, stats.Warm = time.Since(acquireStart), warm
		if cerr != nil {
			return nil, e.explain(cerr, lang)
		}
		stats.Reached |= StageAcquired
		execStart := time.Now()
		sres, err = sb.Exec(ctx, job, opts.OnChunk)
		stats.Exec, stats.Reached = time.Since(execStart), stats.Reached|StageExecuted
		sandboxID = sb.ID()
		// A pool sandbox can die while idle a moment before the pool
		// notices; the job never reached it, so it goes to another one.
		for retry := 0; warm && errors.Is(err, sandbox.ErrDead) && retry < maxDeadRetries; retry++ {
			e.log.Warn("pool sandbox ended before its job; taking another", "run", runID, "language", lang.Name, "err", err)
			e.pool.Release(sb)
			if sb, warm, cerr = e.sandbox(ctx, lang); cerr != nil {
				return nil, e.explain(cerr, lang)
			}
			sandboxID = sb.ID()
			sres, err = sb.Exec(ctx, job, opts.OnChunk)
		}
		if warm {
			e.pool.Release(sb) // removed in the background; never reused
		} else {
			e.removeLater(sb, slot)
			slot = nil
		}
	}
	if err != nil {
		return nil, e.explain(err, lang)
	}
	out := e.shape(runID, owner, lang, sres, ctx.Err() != nil)
	out.SandboxID = sandboxID
	out.Artifacts = e.keepArtifacts(runID, owner, sres.Artifacts)
	out.RuntimeVersion = e.RuntimeVersion(ctx, lang)
	if inst != nil {
		out.Packages, out.PackagesCached = inst.Installed, inst.Cached
	}
	if proxy != nil {
		r := proxy.Report()
		out.Network = &r
		if d := describeDenied(r); d != "" && out.Status != StatusOK {
			out.ExitReason = strings.TrimSpace(out.ExitReason + " (" + d + ")")
		}
	}
	out.TotalMs = time.Since(start).Milliseconds()
	if session != nil && !useKernel && lang.Kernel != nil {
		out.ExitReason = strings.TrimSpace(out.ExitReason + " (ran as a script in the session's workspace because stdin or args were given; interpreter state was not used)")
	}
	e.log.Info("run finished", "run", runID, "language", lang.Name, "status", out.Status,
		"exit_code", out.ExitCode, "duration_ms", out.DurationMs, "total_ms", out.TotalMs, "session", session != nil)
	return out, nil
}

// maxDeadRetries bounds how many more pool sandboxes a run tries when the
// one it took had died before its job reached it.
const maxDeadRetries = 2

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

// sandbox returns a sandbox for one run: a warm one from the pool when the
// language has a pool, else a new one (the cold path).
func (e *Engine) sandbox(ctx context.Context, lang languages.Language) (sandbox.Sandbox, bool, error) {
	if e.pool != nil && e.pool.Has(lang.Name) {
		sb, err := e.pool.Get(ctx, lang.Name)
		return sb, true, err
	}
	sb, err := e.backend.Create(ctx, e.Template(lang))
	return sb, false, err
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
