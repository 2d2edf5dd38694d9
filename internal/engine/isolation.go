package engine

import (
	"errors"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// isolation is the operator's isolation, that of the warm pool's sandboxes.
func (e *Engine) isolation() sandbox.Isolation { return operatorIsolation(e.cfg) }

func operatorIsolation(cfg config.Config) sandbox.Isolation {
	i, err := sandbox.ParseIsolation(cfg.Isolation)
	if err != nil {
		return sandbox.IsolationGVisor // config.Validate refuses it first; never weaker than asked
	}
	return i
}

// ResolveIsolation is the isolation of a run or session of owner (a
// principal's name) that asked for asked, on backend under the operator's
// cfg: the stronger of what it asked, the operator's isolation and what
// the operator requires of that principal (gvisor.required_for). A request
// may tighten the operator's isolation, never loosen it; one the backend
// cannot make here is refused with what to do.
func ResolveIsolation(cfg config.Config, backend sandbox.Backend, owner, asked string) (sandbox.Isolation, error) {
	want, err := sandbox.ParseIsolation(asked)
	if err != nil {
		return "", invalid("%v", err)
	}
	floor, _ := sandbox.ParseIsolation(cfg.IsolationFor(owner))
	operator := operatorIsolation(cfg)
	i := want.Stronger(floor).Stronger(operator)
	if err := sandbox.IsolationSupport(backend, i); err != nil {
		msg := err.Error() + "; ask the operator to install gVisor (make gvisor)"
		if floor == sandbox.IsolationContainer && operator == sandbox.IsolationContainer {
			msg += ", or leave isolation out"
		}
		if errors.Is(err, sandbox.ErrUnsupported) {
			return "", &Error{Code: CodeUnavailable, Message: msg, Err: err}
		}
		return "", &Error{Code: CodeInternal, Message: msg, Err: err}
	}
	return i, nil
}
