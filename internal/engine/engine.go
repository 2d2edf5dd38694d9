package engine

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// RuntimeVersions finds the runtime version recorded for a language when
// its image was built (images.LocalVersions reads it from the local image
// store).
type RuntimeVersions interface {
	RuntimeVersion(ctx context.Context, lang languages.Language) (string, error)
}

// Option configures an Engine.
type Option func(*Engine)

// WithRuntimeVersions makes results and the language list report runtime
// versions from v; without it they report none.
func WithRuntimeVersions(v RuntimeVersions) Option {
	return func(e *Engine) { e.versionSource = v }
}

// deadlineGrace is added to the stage timeouts for the sandbox's own start
// and stop when the backend bounds its whole life.
const deadlineGrace = 15 * time.Second

// Engine runs requests on a sandbox backend.
type Engine struct {
	cfg       config.Config
	reg       *languages.Registry
	backend   sandbox.Backend
	outputs   *OutputStore
	artifacts *OutputStore
	slots     chan struct{}
	pool      *pool.Pool // nil: cold path only
	log       *slog.Logger
	obs       Observer

	inflight sync.WaitGroup
	removals sync.WaitGroup // cold sandboxes being removed after their run
	runsMu   sync.Mutex
	runs     map[string]RunInfo
	cancels  map[string]context.CancelFunc

	quotaMu sync.Mutex
	running map[string]int // principal name -> run slots held

	versionSource RuntimeVersions // nil: none reported
	versionsMu    sync.Mutex
	versions      map[string]string // language -> runtime version
}

// New returns an engine.
func New(cfg config.Config, reg *languages.Registry, backend sandbox.Backend, log *slog.Logger, opts ...Option) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		cfg:       cfg,
		reg:       reg,
		backend:   backend,
		outputs:   NewOutputStore(cfg.OutputStoreMB<<20, cfg.Quotas.OutputStoreMB<<20, cfg.OutputRetention()),
		artifacts: NewOutputStore(cfg.Artifacts.StoreMB<<20, cfg.Quotas.ArtifactStoreMB<<20, time.Duration(cfg.Artifacts.RetentionSeconds)*time.Second),
		running:   map[string]int{},
		slots:     make(chan struct{}, cfg.MaxConcurrentRuns),
		log:       log,
		obs:       nopObserver{},
		versions:  map[string]string{},
		runs:      map[string]RunInfo{},
		cancels:   map[string]context.CancelFunc{},
	}
	for _, o := range opts {
		o(e)
	}
	return e
}

// Registry returns the language registry.
func (e *Engine) Registry() *languages.Registry { return e.reg }

// Config returns the operator configuration.
func (e *Engine) Config() config.Config { return e.cfg }

// Outputs returns the store of full outputs.
func (e *Engine) Outputs() *OutputStore { return e.outputs }

// Backend returns the sandbox backend.
func (e *Engine) Backend() sandbox.Backend { return e.backend }

// RuntimeVersion returns the runtime version of a language as recorded when
// its image was built, or "" when the image is missing or has none.
func (e *Engine) RuntimeVersion(ctx context.Context, lang languages.Language) string {
	e.versionsMu.Lock()
	v, ok := e.versions[lang.Name]
	e.versionsMu.Unlock()
	if ok {
		return v
	}
	if e.versionSource == nil {
		return ""
	}
	v, err := e.versionSource.RuntimeVersion(ctx, lang)
	if err == nil && v != "" {
		e.versionsMu.Lock()
		e.versions[lang.Name] = v
		e.versionsMu.Unlock()
	}
	return v
}

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
	lim := e.cfg.Limits
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
	compileTimeout := lim.CompileTimeoutSeconds
	if lang.Limits.CompileTimeoutSeconds > 0 {
		compileTimeout = lang.Limits.CompileTimeoutSeconds
	}
	env := append([]string(nil), lang.Env...)
	names := make([]string, 0, len(req.Env))
	for k := range req.Env {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		env = append(env, k+"="+req.Env[k])
	}
	request := wire.Request{Workdir: wire.WorkspacePath, OutputLimit: int64(lim.MaxOutputBytes),
		Artifacts: artifactLimits(e.cfg.Artifacts), Session: session != nil}
	useKernel := session != nil && lang.Kernel != nil && req.Stdin == "" && len(req.Args) == 0
	if useKernel {
		request.Op = wire.OpKernel
		request.Files = v.files[1:] // the code goes to the interpreter, not a file
		request.Kernel = &wire.KernelCall{Name: lang.Kernel.Name, Argv: lang.Kernel.Run, Env: env,
			Code: req.Code, TimeoutMs: int64(v.timeout) * 1000}
	} else {
		request.Files = v.files
		if lang.Compiled() {
			request.Stages = append(request.Stages, wire.Stage{
				Name: "compile", Argv: lang.Compile, Env: env,
				TimeoutMs: int64(compileTimeout) * 1000, StopOnFailure: true,
			})
		}
		request.Stages = append(request.Stages, wire.Stage{
			Name: "run", Argv: append(append([]string(nil), lang.Run...), req.Args...), Env: env,
			Stdin: []byte(req.Stdin), TimeoutMs: int64(v.timeout) * 1000,
		})
	}
	deadline := time.Duration(v.timeout)*time.Second + deadlineGrace
	if lang.Compiled() {
		deadline += time.Duration(compileTimeout) * time.Second
	}
	job := sandbox.Job{Request: request, Deadline: deadline, RunID: runID}
	var sres *sandbox.Result
	var sandboxID string
	if session != nil {
		sandboxID = session.ID()
		execStart := time.Now()
		sres, err = session.Call(ctx, job, opts.OnChunk)
		stats.Exec, stats.Reached = time.Since(execStart), stats.Reached|StageExecuted
	} else {
		acquireStart := time.Now()
		sb, warm, cerr := e.sandbox(ctx, lang)
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

// NewSession starts a sandbox for a session of lang that may live for life.
func (e *Engine) NewSession(ctx context.Context, lang languages.Language, life time.Duration) (sandbox.Sandbox, error) {
	t := e.Template(lang)
	t.MaxLife = life + time.Duration(e.cfg.Limits.MaxTimeoutSeconds)*time.Second + deadlineGrace
	t.Purpose = "session-" + lang.Name
	sb, err := e.backend.Create(ctx, t)
	if err != nil {
		return nil, e.explain(err, lang)
	}
	return sb, nil
}

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

// CancelAll cancels every run in flight: each sandbox is killed (a session's
// call is stopped) and each result says the run was killed.
func (e *Engine) CancelAll() int {
	e.runsMu.Lock()
	defer e.runsMu.Unlock()
	for _, cancel := range e.cancels {
		cancel()
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

// Template returns the sandbox template of a language: its image and its
// limits, the operator's defaults with the language's overrides.
func (e *Engine) Template(lang languages.Language) sandbox.Template {
	lim := e.cfg.Limits
	res := sandbox.Resources{
		MemoryMB: lim.MemoryMB, CPUs: lim.CPUs, PidsLimit: lim.PidsLimit,
		WorkspaceMB: lim.WorkspaceMB, TmpMB: lim.TmpMB, NoFile: lim.NoFile, FileSizeMB: lim.FileSizeMB,
	}
	if lang.Limits.MemoryMB > 0 {
		res.MemoryMB = lang.Limits.MemoryMB
	}
	if lang.Limits.PidsLimit > 0 {
		res.PidsLimit = lang.Limits.PidsLimit
	}
	compile := lim.CompileTimeoutSeconds
	if lang.Limits.CompileTimeoutSeconds > 0 {
		compile = lang.Limits.CompileTimeoutSeconds
	}
	longest := max(lim.MaxTimeoutSeconds, e.cfg.Executions.MaxDurationSeconds)
	maxJob := time.Duration(longest+compile)*time.Second + deadlineGrace
	return sandbox.Template{
		Image:     e.reg.ImageOf(lang).Tag,
		Resources: res,
		MaxLife:   time.Duration(e.cfg.Pool.MaxIdleSeconds)*time.Second + maxJob,
		Purpose:   lang.Name,
	}
}

// StartPool starts the warm pool for every language with a pool size.
func (e *Engine) StartPool() {
	templates := map[string]sandbox.Template{}
	sizes := map[string]int{}
	for _, l := range e.reg.Languages() {
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
	}
	e.pool = pool.New(e.backend, templates, pool.Options{
		Sizes:             sizes,
		MaxWaiters:        e.cfg.Pool.MaxWaiters,
		WaitTimeout:       e.cfg.QueueTimeout(),
		MaxIdle:           time.Duration(e.cfg.Pool.MaxIdleSeconds) * time.Second,
		CreateConcurrency: e.cfg.Pool.CreateConcurrency,
		RefillDelay:       time.Duration(e.cfg.Pool.RefillDelayMs) * time.Millisecond,
		Logger:            e.log,
	})
}

// PoolStats returns the warm pool's state; nil without a pool.
func (e *Engine) PoolStats() []pool.Stat {
	if e.pool == nil {
		return nil
	}
	return e.pool.Stats()
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

// Validate checks req without running it; long applies the limits of
// executions that outlive a request.
func (e *Engine) Validate(req Request, long bool) error {
	_, err := e.validate(req, long)
	return err
}

func (e *Engine) validate(req Request, long bool) (*validated, error) {
	lim := e.cfg.Limits
	if long {
		lim.MaxTimeoutSeconds = e.cfg.Executions.MaxDurationSeconds
		lim.TimeoutSeconds = e.cfg.Executions.MaxDurationSeconds
	}
	return validate(req, e.reg, lim)
}

// Reserve takes a run slot, waiting at most the queue timeout, for a run
// that starts later (RunOptions.Release). The slot counts against the
// quota of ctx's principal.
func (e *Engine) Reserve(ctx context.Context) (*Slot, error) { return e.acquire(ctx) }

// Slot is a run slot held for a principal: a place among the server's
// max_concurrent_runs and one among the principal's quotas.concurrent_runs.
type Slot struct {
	slot  func()
	quota func()
}

// Release gives the slot back unused.
func (s *Slot) Release() { s.quota(); s.slot() }

// acquire takes a run slot for ctx's principal, waiting at most the queue
// timeout. A principal at its quota of concurrent runs is answered at once:
// its runs do not queue in front of everyone else's.
func (e *Engine) acquire(ctx context.Context) (*Slot, error) {
	owner := principal.FromContext(ctx).Name
	unquota, err := e.takeQuota(owner)
	if err != nil {
		return nil, err
	}
	release := &Slot{slot: sync.OnceFunc(func() { <-e.slots }), quota: unquota}
	select {
	case e.slots <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(e.cfg.QueueTimeout())
	defer t.Stop()
	select {
	case e.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		unquota()
		return nil, &Error{Code: CodeBusy, Message: fmt.Sprintf("the server is busy: all %d run slots stayed taken for %s; retry shortly", cap(e.slots), e.cfg.QueueTimeout())}
	case <-ctx.Done():
		unquota()
		return nil, &Error{Code: CodeBusy, Message: "the request ended while waiting for a free run slot", Err: ctx.Err()}
	}
}

// takeQuota counts one more run in flight for owner, or answers that owner
// is at its quota (quotas.concurrent_runs).
func (e *Engine) takeQuota(owner string) (func(), error) {
	q := e.cfg.Quotas.ConcurrentRuns
	if q <= 0 {
		return func() {}, nil
	}
	e.quotaMu.Lock()
	defer e.quotaMu.Unlock()
	if n := e.running[owner]; n >= q {
		return nil, &Error{Code: CodeQuota, Message: fmt.Sprintf(
			"over quota: %q already has %d runs in flight, its quota of concurrent runs; wait for one to end (or cancel_execution one) and retry, or ask the operator to raise quotas.concurrent_runs", owner, n)}
	}
	e.running[owner]++
	return sync.OnceFunc(func() {
		e.quotaMu.Lock()
		defer e.quotaMu.Unlock()
		if e.running[owner]--; e.running[owner] <= 0 {
			delete(e.running, owner)
		}
	}), nil
}

// explain turns a backend error into an Error that says what to do.
func (e *Engine) explain(err error, lang languages.Language) error {
	switch {
	case errors.Is(err, pool.ErrBusy):
		return &Error{Code: CodeBusy, Err: err, Message: err.Error()}
	case errors.Is(err, sandbox.ErrImageMissing):
		return &Error{Code: CodeImageMissing, Err: err, Message: fmt.Sprintf(
			"the %s runtime image %s is not built on this host; build it with `mcp-code-runner images build %s` (or `make images`), then retry",
			lang.Name, e.reg.ImageOf(lang).Tag, lang.Name)}
	case errors.Is(err, sandbox.ErrUnavailable):
		// The backend's error says what to do about it.
		return &Error{Code: CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"%v; then run `mcp-code-runner doctor`", err)}
	default:
		return &Error{Code: CodeInternal, Err: err, Message: fmt.Sprintf("the sandbox failed: %v; run `mcp-code-runner doctor` to check the setup", err)}
	}
}

// shape turns the sandbox result into the tool result.
func (e *Engine) shape(runID, owner string, lang languages.Language, sres *sandbox.Result, cancelled bool) *Result {
	out := &Result{RunID: runID, Language: lang.Name}
	stageByName := map[string]*sandbox.StageOutput{}
	for i := range sres.Stages {
		stageByName[sres.Stages[i].Name] = &sres.Stages[i]
	}
	if lang.Compiled() {
		if c := stageByName["compile"]; c != nil {
			st := e.stage(runID, owner, "compile", c)
			out.Compile = &st
		}
	}
	run := stageByName["run"]
	if run != nil {
		out.Stage = e.stage(runID, owner, "run", run)
		out.Value = run.Value
		out.KernelRestarted = run.KernelRestarted
		if run.Cancelled && !sres.Killed {
			out.Status, out.ExitReason = StatusKilled, "the call was cancelled; the session stays usable"
			return out
		}
	}
	switch {
	case sres.AgentError != "":
		out.Status, out.ExitCode = StatusError, 126
		out.ExitReason = "the sandbox refused the request: " + sres.AgentError
	case out.Compile != nil && (out.Compile.ExitCode != 0 || out.Compile.TimedOut) && run == nil:
		out.Status, out.ExitCode = StatusCompileError, out.Compile.ExitCode
		out.ExitReason = "compilation failed; the compiler's messages are in compile.stderr and compile.stdout; the program was not run"
		if out.Compile.TimedOut {
			out.ExitReason = "compilation hit its time limit; the program was not run"
		}
		if out.Compile.OOMKilled {
			out.ExitReason = "compilation hit the memory limit; the program was not run"
		}
	case run == nil || sres.Incomplete:
		// The sandbox ended before the agent reported: the run overran its
		// deadline, the caller left, or memory ran out for the whole sandbox.
		// What the run printed until then is kept and counted.
		out.ExitCode, out.Signal = 137, "SIGKILL"
		if run != nil && run.ExitCode == 0 && run.DurationMs == 0 {
			out.StdoutBytes = max(out.StdoutBytes, int64(len(run.Stdout)))
			out.StderrBytes = max(out.StderrBytes, int64(len(run.Stderr)))
			out.DurationMs = sres.Elapsed.Milliseconds()
			if out.Compile != nil {
				out.DurationMs = max(0, out.DurationMs-out.Compile.DurationMs)
			}
		}
		switch {
		case sres.OOMKilled:
			out.Status, out.OOMKilled = StatusOOM, true
			out.ExitReason = "the sandbox ran out of memory; use less memory"
		case cancelled:
			out.Status = StatusKilled
			out.ExitReason = "the request was cancelled; the sandbox was killed"
		case sres.Killed:
			out.Status, out.TimedOut = StatusTimeout, true
			out.ExitReason = "the sandbox overran its deadline and was killed"
		case strings.Contains(sres.Diagnostics, "failed to create new OS thread") || strings.Contains(sres.Diagnostics, "newosproc"):
			out.Status = StatusKilled
			out.ExitReason = "the program used up the process limit (pids_limit) so that the sandbox could not go on; fewer processes or threads"
		default:
			out.Status = StatusKilled
			out.ExitReason = "the sandbox ended unexpectedly"
		}
	case out.TimedOut:
		out.Status = StatusTimeout
		out.ExitReason = "the program hit its time limit and was killed; output up to then is kept"
		if out.OOMKilled {
			out.ExitReason += "; before that, the memory limit was reached and the out-of-memory killer ended some of its processes"
		}
	case out.OOMKilled:
		out.Status = StatusOOM
		out.ExitReason = "the program hit the memory limit and was killed"
	case out.ExitCode != 0:
		out.Status = StatusError
	default:
		out.Status = StatusOK
	}
	if run != nil && run.Error != "" {
		out.ExitReason = run.Error
	}
	return out
}

// stage shapes one stage, capping inline output and keeping the full output.
func (e *Engine) stage(runID, owner, name string, s *sandbox.StageOutput) Stage {
	lim := e.cfg.Limits.InlineOutputBytes
	st := Stage{
		ExitCode: s.ExitCode, Signal: s.Signal, TimedOut: s.TimedOut, OOMKilled: s.OOMKilled,
		StdoutBytes: s.StdoutBytes, StderrBytes: s.StderrBytes,
		DurationMs: s.DurationMs, CPUTimeMs: s.CPUTimeMs, MaxMemoryKB: s.MaxRSSKB,
	}
	st.Stdout, st.StdoutTruncated = clip(s.Stdout, lim, s.StdoutBytes)
	st.Stderr, st.StderrTruncated = clip(s.Stderr, lim, s.StderrBytes)
	if st.StdoutTruncated {
		st.StdoutURI = OutputURI(runID, name, "stdout")
		e.outputs.Put(st.StdoutURI, owner, s.Stdout)
	}
	if st.StderrTruncated {
		st.StderrURI = OutputURI(runID, name, "stderr")
		e.outputs.Put(st.StderrURI, owner, s.Stderr)
	}
	if s.Error != "" && st.Stderr == "" {
		st.Stderr = s.Error
	}
	return st
}

// clip fits data into limit bytes, keeping the head and the tail (where
// errors usually are) with a marker between them. total is how much the
// program wrote, which may exceed len(data) when the sandbox dropped output.
func clip(data []byte, limit int, total int64) (string, bool) {
	if len(data) <= limit && int64(len(data)) >= total {
		return string(data), false
	}
	if len(data) <= limit {
		return string(data) + fmt.Sprintf("\n[output truncated: %d of %d bytes kept]\n", len(data), total), true
	}
	head := validPrefix(data[:limit*3/4])
	tail := validSuffix(data[len(data)-limit/4:])
	omitted := total - int64(len(head)) - int64(len(tail))
	return head + fmt.Sprintf("\n[... %d bytes omitted ...]\n", omitted) + tail, true
}

func validPrefix(b []byte) string {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.Valid(b); i++ {
		b = b[:len(b)-1]
	}
	return string(b)
}

func validSuffix(b []byte) string {
	for i := 0; i < utf8.UTFMax && len(b) > 0 && !utf8.RuneStart(b[0]); i++ {
		b = b[1:]
	}
	return string(b)
}

func newRunID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Summary is a one-line human description of a result.
func Summary(r *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s run %s: %s", r.Language, r.RunID, r.Status)
	if r.Compile != nil && r.Status == StatusCompileError {
		fmt.Fprintf(&b, " (compiler exit code %d)", r.Compile.ExitCode)
	} else {
		fmt.Fprintf(&b, ", exit code %d", r.ExitCode)
		if r.Signal != "" {
			fmt.Fprintf(&b, " (%s)", r.Signal)
		}
	}
	fmt.Fprintf(&b, " in %d ms.", r.DurationMs)
	if r.StdoutTruncated || r.StderrTruncated {
		b.WriteString(" Output was truncated; the full text is readable at the stdout_uri/stderr_uri resources.")
	}
	return b.String()
}
