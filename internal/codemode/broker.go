// Package codemode is code that calls tools: the server's side of MCP's
// "code mode". The operator names MCP servers (code_mode.servers); a run
// given some of them (tools) gets libraries in its sandbox (mcr_tools for
// Python, mcr-tools for JavaScript and TypeScript) whose calls travel as
// frames over the agent's link to the server, where the [Broker] checks
// each against the principal's grants, the run's quotas and the
// principal's rate limit, asks for approval where the operator wants it,
// and makes it on the upstream server with its own client session. The
// sandbox's network stays as it was, and the upstreams' credentials never
// enter it.
package codemode

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/time/rate"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Record is one brokered call, for the audit log and the metrics.
type Record struct {
	Principal string
	RunID     string
	Server    string
	Tool      string
	// Status is ok, tool_error (the tool answered isError), refused (not
	// granted, over a quota or the rate limit, not approved), timeout or
	// failed (the upstream could not answer).
	Status      string
	Error       string
	Duration    time.Duration
	ArgsBytes   int
	ResultBytes int
	// Arguments are the call's, when code_mode.audit_arguments says so.
	Arguments json.RawMessage
}

// Statuses of a Record.
const (
	StatusOK        = "ok"
	StatusToolError = "tool_error"
	StatusRefused   = "refused"
	StatusTimeout   = "timeout"
	StatusFailed    = "failed"
)

// Approver asks a run's user whether a call may go ahead (MCP
// elicitation). It returns false when the user declined, and an error when
// there is no one to ask.
type Approver interface {
	Approve(ctx context.Context, server, tool string) (bool, error)
}

// Broker holds one client session per upstream server and makes the calls
// of every run given tools. Safe for concurrent use.
type Broker struct {
	cfg    config.CodeMode
	log    *slog.Logger
	secret func(string) (string, error)
	getenv func(string) string

	mu        sync.Mutex
	upstreams map[string]*upstream
	limiters  map[string]*rate.Limiter // by principal
	observers []func(Record)
	sessions  sessionRuns
	rounds    rounds
}

// New returns a broker of cfg's servers; secret reads an operator secret
// by name and getenv the server's environment, for the {secret:NAME} and
// {env:NAME} references of their env and headers. It connects to nothing
// until a run needs a server.
func New(cfg config.CodeMode, secret func(string) (string, error), getenv func(string) string, log *slog.Logger) *Broker {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if secret == nil {
		secret = func(name string) (string, error) { return "", fmt.Errorf("no secret %q is configured", name) }
	}
	b := &Broker{cfg: cfg, log: log, secret: secret, getenv: getenv,
		upstreams: map[string]*upstream{}, limiters: map[string]*rate.Limiter{}, sessions: sessionRuns{runs: map[string]*Run{}}, rounds: rounds{m: map[string]*Round{}}}
	for name, spec := range cfg.Servers {
		b.upstreams[name] = &upstream{name: name, spec: spec, b: b}
	}
	return b
}

// Observe adds fn to what hears of every call.
func (b *Broker) Observe(fn func(Record)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.observers = append(b.observers, fn)
}

// Config returns the broker's settings.
func (b *Broker) Config() config.CodeMode { return b.cfg }

// Servers lists the configured servers, sorted.
func (b *Broker) Servers() []string { return slices.Sorted(maps.Keys(b.cfg.Servers)) }

// Close ends every upstream session (a stdio server's process with it).
func (b *Broker) Close() {
	for _, u := range b.upstreams {
		u.close()
	}
}

// Check refuses servers that principal may not give a run, each error
// naming the server and how it is granted.
func (b *Broker) Check(principal string, servers []string) error {
	seen := map[string]bool{}
	for _, s := range servers {
		if seen[s] {
			return fmt.Errorf("tools: %q is named twice; name each server once", s)
		}
		seen[s] = true
		if _, ok := b.cfg.Servers[s]; !ok {
			known := "none is granted to principal " + principal
			if names := b.cfg.Granted(principal); len(names) > 0 {
				known = "those principal " + principal + " may use are " + strings.Join(names, ", ")
			}
			return fmt.Errorf("tools: %q is not an MCP server of this server's code mode; %s (the operator adds servers in code_mode.servers, and grants them in code_mode.grants)", s, known)
		}
		if !b.cfg.Allows(principal, s) {
			return fmt.Errorf("tools: MCP server %q is not granted to principal %q; the operator grants it in code_mode.grants (a grant naming this principal and the server)", s, principal)
		}
	}
	return nil
}

// Tools lists server's tools, from its session (listed once per
// connection).
func (b *Broker) Tools(ctx context.Context, server string) ([]*mcp.Tool, error) {
	u, ok := b.upstreams[server]
	if !ok {
		return nil, fmt.Errorf("no MCP server %q is configured in code_mode.servers", server)
	}
	ctx, cancel := context.WithTimeout(ctx, b.timeout())
	defer cancel()
	return u.listTools(ctx)
}

func (b *Broker) timeout() time.Duration {
	return time.Duration(b.cfg.CallTimeoutSeconds) * time.Second
}

// limiter is principal's bucket of calls.
func (b *Broker) limiter(principal string) *rate.Limiter {
	b.mu.Lock()
	defer b.mu.Unlock()
	l, ok := b.limiters[principal]
	if !ok {
		per := float64(b.cfg.CallsPerMinute) / 60
		l = rate.NewLimiter(rate.Limit(per), max(1, b.cfg.CallsPerMinute))
		b.limiters[principal] = l
	}
	return l
}

func (b *Broker) record(r Record) {
	b.mu.Lock()
	obs := slices.Clone(b.observers)
	b.mu.Unlock()
	for _, fn := range obs {
		fn(r)
	}
}

// Begin returns the grant of one run (or one session: its calls share it)
// of principal to servers, checked; approver asks its user where the
// operator wants approval (nil: nobody can be asked, and such calls are
// refused).
func (b *Broker) Begin(principal string, servers []string, approver Approver) (*Run, error) {
	if err := b.Check(principal, servers); err != nil {
		return nil, err
	}
	return &Run{b: b, principal: principal, servers: slices.Clone(servers), approver: approver,
		approved: map[string]bool{}, slots: make(chan struct{}, b.cfg.MaxConcurrentCalls)}, nil
}

// Run is one run's (or session's) grant: the servers it may call, its
// calls counted against code_mode.max_calls_per_run, the approvals its user
// gave.
type Run struct {
	b         *Broker
	principal string
	servers   []string
	approver  Approver
	round     *Round // the 2026-07-28 era's approvals, instead of approver
	slots     chan struct{}

	mu       sync.Mutex
	calls    int
	approved map[string]bool // server, or server/tool
}

// Servers are the servers the run was given.
func (r *Run) Servers() []string { return r.servers }

// Library generates the run's libraries for its sandbox.
func (r *Run) Library(ctx context.Context) (*wire.Tools, error) {
	return r.b.Library(ctx, r.servers)
}

// SetApprover replaces who is asked for approval (a session's next call
// comes with its own client request).
func (r *Run) SetApprover(a Approver) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.approver = a
}

// ResetCalls starts a new count of calls (a session's next call).
func (r *Run) ResetCalls() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = 0
}

// CallTool makes one call a program of run runID sent through its agent,
// and answers it; it never fails otherwise than in the answer's Error.
func (r *Run) CallTool(ctx context.Context, runID string, call wire.ToolCall) wire.ToolResult {
	start := time.Now()
	rec := Record{Principal: r.principal, RunID: runID, Server: call.Server, Tool: call.Tool, ArgsBytes: len(call.Arguments)}
	if r.b.cfg.AuditArguments {
		rec.Arguments = call.Arguments
	}
	res, status, err := r.call(ctx, call)
	rec.Duration, rec.Status = time.Since(start), status
	out := wire.ToolResult{ID: call.ID}
	if err != nil {
		rec.Error, out.Error = err.Error(), err.Error()
	} else {
		rec.ResultBytes, out.Result = len(res), res
	}
	r.b.record(rec)
	return out
}

func (r *Run) call(ctx context.Context, call wire.ToolCall) (json.RawMessage, string, error) {
	if err := r.admit(ctx, call); err != nil {
		return nil, StatusRefused, err
	}
	select {
	case r.slots <- struct{}{}:
		defer func() { <-r.slots }()
	default:
		return nil, StatusRefused, fmt.Errorf("this run already has %d tool calls in flight (code_mode.max_concurrent_calls); wait for one to end", cap(r.slots))
	}
	u := r.b.upstreams[call.Server]
	ctx, cancel := context.WithTimeout(ctx, r.b.timeout())
	defer cancel()
	res, err := u.call(ctx, call.Tool, call.Arguments)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, StatusTimeout, fmt.Errorf("MCP server %q did not answer %s within %ds (code_mode.call_timeout_seconds)", call.Server, call.Tool, r.b.cfg.CallTimeoutSeconds)
		}
		return nil, StatusFailed, err
	}
	data, err := encodeResult(res)
	if err != nil {
		return nil, StatusFailed, fmt.Errorf("MCP server %q: encoding the result of %s: %v", call.Server, call.Tool, err)
	}
	if len(data) > r.b.cfg.MaxResultBytes {
		return nil, StatusRefused, fmt.Errorf("the result of %s.%s is %d bytes, over the %d bytes a result may have (code_mode.max_result_bytes); ask for less (a narrower query, a page)", call.Server, call.Tool, len(data), r.b.cfg.MaxResultBytes)
	}
	if res.IsError {
		return data, StatusToolError, nil
	}
	return data, StatusOK, nil
}

// sandboxResult is a CallToolResult as the libraries give it: its three
// fields always there (structuredContent null when the tool gave none), so
// that a program reads result["isError"] without a default.
type sandboxResult struct {
	Content           []mcp.Content `json:"content"`
	StructuredContent any           `json:"structuredContent"`
	IsError           bool          `json:"isError"`
}

func encodeResult(res *mcp.CallToolResult) ([]byte, error) {
	out := sandboxResult{Content: res.Content, StructuredContent: res.StructuredContent, IsError: res.IsError}
	if out.Content == nil {
		out.Content = []mcp.Content{}
	}
	return json.Marshal(out)
}

// admit checks a call against the run's grant, the principal's current
// grants, the run's quota, the principal's rate limit and approval.
func (r *Run) admit(ctx context.Context, call wire.ToolCall) error {
	if !slices.Contains(r.servers, call.Server) {
		given := "no server"
		if len(r.servers) > 0 {
			given = strings.Join(r.servers, ", ")
		}
		return fmt.Errorf("this run was not given MCP server %q (it was given %s); name it in tools of run_code, start_execution or create_session", call.Server, given)
	}
	if !r.b.cfg.Allows(r.principal, call.Server) {
		return fmt.Errorf("MCP server %q is not granted to principal %q; the operator grants it in code_mode.grants", call.Server, r.principal)
	}
	if call.Tool == "" {
		return errors.New("the call names no tool")
	}
	if a := strings.TrimSpace(string(call.Arguments)); a != "" && !strings.HasPrefix(a, "{") {
		return fmt.Errorf("the arguments of %s.%s must be a JSON object (a dict in Python, an object in JavaScript)", call.Server, call.Tool)
	}
	r.mu.Lock()
	r.calls++
	n := r.calls
	r.mu.Unlock()
	if n > r.b.cfg.MaxCallsPerRun {
		return fmt.Errorf("this run made more than %d tool calls (code_mode.max_calls_per_run); the rest are refused", r.b.cfg.MaxCallsPerRun)
	}
	if !r.b.limiter(r.principal).Allow() {
		return fmt.Errorf("too many tool calls: at most %d a minute per principal (code_mode.calls_per_minute); slow down and try again", r.b.cfg.CallsPerMinute)
	}
	return r.approve(ctx, call)
}

// approve asks the run's user about a call that the operator wants
// approved, once per server or tool for the run.
func (r *Run) approve(ctx context.Context, call wire.ToolCall) error {
	spec := r.b.cfg.Servers[call.Server]
	key := call.Server
	switch spec.Approval {
	case config.ApprovalServer:
	case config.ApprovalTools:
		if !slices.Contains(spec.ApprovalTools, call.Tool) {
			return nil
		}
		key += "/" + call.Tool
	default:
		return nil
	}
	r.mu.Lock()
	ok, approver, round := r.approved[key], r.approver, r.round
	r.mu.Unlock()
	if ok {
		return nil
	}
	if round != nil {
		switch allowed, answered := round.decide(key); {
		case allowed:
			return nil
		case answered:
			return fmt.Errorf("the user declined calls of %s", key)
		default:
			return fmt.Errorf("calls of %s need the user's approval, which this call's result asks for; the run is run again once the user answers", key)
		}
	}
	if approver == nil {
		return fmt.Errorf("calls of %s need the user's approval (code_mode.servers %q approval), and no one can be asked during this run (its client declared no elicitation, or the run is not a client's request in progress, as start_execution's is not); run the code with run_code from a client that supports elicitation", key, call.Server)
	}
	yes, err := approver.Approve(ctx, call.Server, call.Tool)
	switch {
	case err != nil:
		return fmt.Errorf("calls of %s need the user's approval, which could not be asked: %v", key, err)
	case !yes:
		return fmt.Errorf("the user declined the call of %s.%s", call.Server, call.Tool)
	}
	r.mu.Lock()
	r.approved[key] = true
	r.mu.Unlock()
	return nil
}
