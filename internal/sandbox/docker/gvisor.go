package docker

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// gvisorRuntime is the daemon's name of gVisor's runsc.
func (b *Backend) gvisorRuntime() string {
	if b.opts.GVisorRuntime != "" {
		return b.opts.GVisorRuntime
	}
	return "runsc"
}

// IsolationSupport says whether sandboxes of i can be made here: gVisor's
// need the daemon to have runsc registered (scripts/ensure-gvisor.sh).
func (b *Backend) IsolationSupport(i sandbox.Isolation) error {
	if i.Or() != sandbox.IsolationGVisor {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := b.daemonInfo(ctx)
	if err != nil {
		return fmt.Errorf("%w: isolation gvisor: asking the Docker daemon for its runtimes: %v", sandbox.ErrUnsupported, err)
	}
	names := make([]string, 0, len(info.Info.Runtimes))
	for name := range info.Info.Runtimes {
		names = append(names, name)
	}
	if !slices.Contains(names, b.gvisorRuntime()) {
		return fmt.Errorf("%w: isolation gvisor: the Docker daemon has no runtime %q (it has %v); register gVisor's runsc with `make gvisor` (scripts/ensure-gvisor.sh) or set gvisor.docker_runtime", sandbox.ErrUnsupported, b.gvisorRuntime(), names)
	}
	return nil
}
