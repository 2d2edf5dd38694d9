package codemode

import (
	"context"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

type approverKey struct{}

// WithApprover returns ctx carrying who asks the user of the request
// about calls that need approval (the MCP surface's elicitation).
func WithApprover(ctx context.Context, a Approver) context.Context {
	return context.WithValue(ctx, approverKey{}, a)
}

func approverFrom(ctx context.Context) Approver {
	a, _ := ctx.Value(approverKey{}).(Approver)
	return a
}

// maxSessionGrants bounds the sessions' grants kept for their approvals;
// past it they are forgotten (their next calls ask again).
const maxSessionGrants = 4096

// sessionRuns keeps each session's grant, so that an approval "for the
// session" holds across its calls.
type sessionRuns struct {
	mu   sync.Mutex
	runs map[string]*Run
}

// RunTools gives a run of ctx's principal the servers (the engine's hook,
// engine.ToolBroker): its libraries, listed from the servers now, and its
// grant, which makes its programs' calls. The calls of one session share a
// grant (its approvals), each call counted anew.
func (b *Broker) RunTools(ctx context.Context, servers []string, session string) (*wire.Tools, sandbox.ToolCaller, error) {
	who := principal.FromContext(ctx).Name
	var run *Run
	if session != "" {
		key := who + "\x00" + session
		b.sessions.mu.Lock()
		run = b.sessions.runs[key]
		b.sessions.mu.Unlock()
		if run != nil {
			run.SetApprover(approverFrom(ctx))
			run.ResetCalls()
		}
		defer func() {
			b.sessions.mu.Lock()
			defer b.sessions.mu.Unlock()
			if len(b.sessions.runs) >= maxSessionGrants {
				b.sessions.runs = map[string]*Run{}
			}
			if run != nil {
				b.sessions.runs[key] = run
			}
		}()
	}
	if run == nil {
		var err error
		if run, err = b.Begin(who, servers, approverFrom(ctx)); err != nil {
			return nil, nil, err
		}
		run.round = roundFrom(ctx)
	}
	lib, err := run.Library(ctx)
	if err != nil {
		return nil, nil, err
	}
	return lib, run, nil
}
