package engine

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Plan is one call resolved and checked, once: its language, stages,
// limits, network and packages. [Engine.Prepare] makes it for a one-shot
// run and [Engine.PrepareInSession] for a call in a session; [Engine.RunPlan]
// and [Engine.RunOn] run it, and callers read from it what they show before
// the run (the stages of progress messages, an execution's language).
type Plan struct {
	// Request is the call as asked.
	Request Request
	// Language is the request's language, from the registry.
	Language languages.Language
	// Timeout is the run stage's time limit in seconds.
	Timeout int
	// CompileTimeout is the compile stage's time limit in seconds.
	CompileTimeout int
	// Network is the run's tier: none, packages or allowlist.
	Network string
	// Packages are installed before the run.
	Packages []string
	// Secrets are the operator's secrets the run asked for, with their
	// values: its egress proxy sets them, the sandbox sees placeholders.
	Secrets []egress.Secret
	// Isolation is what the run's sandbox is made with (for a session's
	// call, the session's).
	Isolation sandbox.Isolation
	// Session says the plan is a call in a session's sandbox.
	Session bool
	// Kernel says the code goes to the session's long-lived interpreter
	// (a language with a kernel, and no stdin or args).
	Kernel bool
	// Tools are the MCP servers whose tools the run's programs may call
	// (code mode): the request's, or in a session the session's.
	Tools []string

	files []wire.File // the code's file first
}

// Stages names the plan's stages in order, as its output reports them.
func (p *Plan) Stages() []string {
	if p.Language.Compiled() {
		return []string{"compile", "run"}
	}
	return []string{"run"}
}

// Prepare resolves and checks req for a one-shot run; long applies the
// limits of executions that outlive a request. Each error says what is
// wrong and what to do; the observer counts a refused call as a run.
func (e *Engine) Prepare(ctx context.Context, req Request, long bool) (*Plan, error) {
	return e.prepare(ctx, req, RunOptions{Long: long})
}

func (e *Engine) prepare(ctx context.Context, req Request, opts RunOptions) (*Plan, error) {
	lang, err := resolve(req.Language, e.reg)
	if err != nil {
		return nil, e.refuse(ctx, err, opts, false)
	}
	p, err := e.plan(req, lang, opts.Long, false)
	if err == nil {
		p.Isolation, err = ResolveIsolation(e.cfg, e.backend, principal.FromContext(ctx).Name, req.Isolation)
	}
	if err == nil {
		p.Network, err = e.gate.Check(req.Network)
	}
	if err == nil {
		err = packages.Check(e.cfg, e.reg, lang, req.Packages)
	}
	if err == nil {
		p.Secrets, err = e.gate.CheckSecrets(principal.FromContext(ctx).Name, req.Secrets, p.Network, lang)
	}
	if err == nil {
		err = e.checkTools(ctx, req.Tools)
	}
	if err != nil {
		return nil, e.refuse(ctx, err, opts, false)
	}
	return p, nil
}

// PrepareInSession checks req as a call in a session of lang, whose
// network, packages and secrets (by name) are the session's own.
func (e *Engine) PrepareInSession(ctx context.Context, req Request, lang languages.Language, secrets []string) (*Plan, error) {
	err := sessionSecrets(req.SessionID, req.Secrets, secrets)
	req.Secrets = nil // the session's apply to every call
	p, perr := e.plan(req, lang, false, true)
	switch {
	case err != nil:
	case perr != nil:
		err = perr
	case req.Network != "":
		err = invalid("network is chosen when the session is created (create_session's network); leave it out of a session's run_code")
	case len(req.Packages) > 0:
		err = invalid("a session installs packages with install_packages (or create_session's packages); leave packages out of a session's run_code")
	case len(req.Tools) > 0:
		err = invalid("a session's tools are chosen when it is created (create_session's tools) and apply to every call; leave tools out of a session's run_code")
	}
	if err != nil {
		return nil, e.refuse(ctx, err, RunOptions{}, true)
	}
	p.Network = egress.TierNone
	return p, nil
}

// sessionSecrets checks the secrets a call in session id names against
// has, those the session was created with. A call cannot add one: the
// session's proxy, its placeholders and its interpreter's environment are
// fixed when its sandbox starts. Nor does it narrow them: the session's
// interpreter and the processes it left running share that one proxy, so
// a narrower call would promise what the proxy cannot keep. Naming the
// session's own is allowed and changes nothing.
func sessionSecrets(id string, asked, has []string) error {
	for _, n := range asked {
		if !slices.Contains(has, n) {
			with := "was created without secrets"
			if len(has) > 0 {
				with = "was created with " + strings.Join(has, ", ") + " only"
			}
			return invalid("secret %q: session %s %s, and every call in a session uses the session's secrets; leave secrets out of this run_code, or create a session that names %q in create_session's secrets", n, id, with, n)
		}
	}
	return nil
}

// plan checks req against the limits and lays out its stages.
func (e *Engine) plan(req Request, lang languages.Language, long, session bool) (*Plan, error) {
	lim := e.cfg.Limits
	if long {
		lim.MaxTimeoutSeconds = e.cfg.Executions.MaxDurationSeconds
		lim.TimeoutSeconds = e.cfg.Executions.MaxDurationSeconds
	}
	v, err := check(req, lang, lim)
	if err != nil {
		return nil, err
	}
	compile := e.cfg.Limits.CompileTimeoutSeconds
	if lang.Limits.CompileTimeoutSeconds > 0 {
		compile = lang.Limits.CompileTimeoutSeconds
	}
	return &Plan{
		Request: req, Language: lang, Timeout: v.timeout, CompileTimeout: compile,
		Packages: req.Packages, Session: session, files: v.files, Tools: req.Tools,
		Kernel: session && lang.Kernel != nil && req.Stdin == "" && len(req.Args) == 0,
	}, nil
}

// deadline is how long the whole job may take in its sandbox.
func (p *Plan) deadline() time.Duration {
	d := time.Duration(p.Timeout)*time.Second + deadlineGrace
	if p.Language.Compiled() {
		d += time.Duration(p.CompileTimeout) * time.Second
	}
	return d
}

// refuse counts a call turned down before its run as a run whose status is
// the error's code, gives back the slot the caller brought, and returns err.
func (e *Engine) refuse(ctx context.Context, err error, opts RunOptions, session bool) error {
	start := time.Now()
	if opts.Release != nil {
		opts.Release.Release()
	}
	stats := RunStats{Session: session, QueueWait: opts.QueueWait, Status: CodeOf(err), Total: time.Since(start)}
	if opts.Release != nil {
		stats.Reached |= StageQueued
	}
	e.obs.RunDone(ctx, stats)
	return err
}
