package engine

import (
	"context"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// ToolBroker gives runs the tools of MCP servers (code mode; the server's
// is internal/codemode's Broker).
type ToolBroker interface {
	// Check refuses servers the principal may not give a run, saying why
	// and how they are granted.
	Check(principal string, servers []string) error
	// RunTools returns, for a run of ctx's principal given servers, the
	// libraries its sandbox gets and who makes its programs' calls; a
	// session's calls (session set) share one grant and its approvals.
	RunTools(ctx context.Context, servers []string, session string) (*wire.Tools, sandbox.ToolCaller, error)
}

// WithToolBroker makes runs that name tools call them through b; without
// one such runs are refused.
func WithToolBroker(b ToolBroker) Option { return func(e *Engine) { e.toolBroker = b } }

// checkTools refuses a run's tools that no broker serves or its principal
// may not use.
func (e *Engine) checkTools(ctx context.Context, servers []string) error {
	return CheckTools(e.toolBroker, principal.FromContext(ctx).Name, servers)
}

// CheckTools refuses tools (MCP servers, code mode) that b does not serve
// (nil: no broker) or that owner may not give a run or a session.
func CheckTools(b ToolBroker, owner string, servers []string) error {
	if len(servers) == 0 {
		return nil
	}
	if b == nil {
		return invalid("tools: this server has no MCP servers for code to call (the operator names them in code_mode.servers); leave tools out")
	}
	if err := b.Check(owner, servers); err != nil {
		return invalid("%v", err)
	}
	return nil
}

// equipTools gives the run's job its tools, when it names some.
func (e *Engine) equipTools(ctx context.Context, r *run) error {
	if len(r.plan.Tools) == 0 || e.toolBroker == nil {
		return nil
	}
	session := ""
	if r.plan.Session {
		session = r.plan.Request.SessionID
	}
	lib, caller, err := e.toolBroker.RunTools(ctx, r.plan.Tools, session)
	if err != nil {
		return &Error{Code: CodeUnavailable, Message: err.Error()}
	}
	r.job.Request.Tools, r.job.Tools = lib, caller
	return nil
}
