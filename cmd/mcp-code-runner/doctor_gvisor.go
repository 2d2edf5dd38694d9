package main

import (
	"context"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// gvisor says whether sandboxes can run under gVisor's kernel here, by
// running one: a bash program that prints the kernel it sees.
func (d *doctor) gvisor(ctx context.Context, st *stack) {
	required := st.cfg.Isolation == string(sandbox.IsolationGVisor)
	report := d.info
	if required {
		report = func(format string, args ...any) {
			d.fail("install gVisor with `make gvisor` (scripts/ensure-gvisor.sh), or set isolation container", format, args...)
		}
	}
	if err := sandbox.IsolationSupport(st.backend, sandbox.IsolationGVisor); err != nil {
		report("gVisor: sandboxes cannot run under gVisor's kernel here: %v", err)
		return
	}
	res, err := st.engine.Run(ctx, engine.Request{Language: "bash", Code: "uname -r", Isolation: string(sandbox.IsolationGVisor)}, engine.RunOptions{})
	switch {
	case err != nil:
		report("gVisor: runsc is there, but a sandbox under it did not run: %v", err)
	case res.ExitCode != 0 || !strings.Contains(res.Stdout, "gvisor"):
		report("gVisor: a sandbox under it ran, but not on gVisor's kernel (exit %d, uname -r %q, stderr %q)", res.ExitCode, strings.TrimSpace(res.Stdout), strings.TrimSpace(res.Stderr))
	case required:
		d.ok("gVisor: every sandbox runs under gVisor's kernel (%s, in %d ms)", strings.TrimSpace(res.Stdout), res.DurationMs)
	default:
		d.ok("gVisor works here (a sandbox under it saw kernel %s); sandboxes are containers unless a call, a session or the operator (isolation gvisor) asks for it", strings.TrimSpace(res.Stdout))
	}
}
