package docker

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// RuntimeAuto (or an empty runtime) picks crun when the daemon has it
// registered, else the daemon's default runtime. crun creates and starts a
// container in about half the time runc takes (docs/PERFORMANCE.md), with
// the same hardening.
const RuntimeAuto = "auto"

// preferredRuntime is what RuntimeAuto picks when the daemon has it.
const preferredRuntime = "crun"

// ErrRuntimeMissing is a configured runtime the daemon does not know.
var ErrRuntimeMissing = errors.New("OCI runtime not registered with the Docker daemon")

// RuntimeChoice is the runtime sandboxes run under and why.
type RuntimeChoice struct {
	// Name is what containers are created with ("" = the daemon's default).
	Name string
	// Effective is the runtime that actually runs them (Name, or the
	// daemon's default runtime's name).
	Effective string
	// Reason says how it was chosen, for logs and doctor.
	Reason string
	// Registered lists the runtimes the daemon knows, sorted.
	Registered []string
	// auto says the operator left the choice to the backend, which may then
	// fall back to the daemon's default (runtimeFailed).
	auto    bool
	defName string
}

// chooseRuntime picks the runtime for configured ("" or "auto" or a name)
// from the daemon's registered runtimes and its default.
func chooseRuntime(configured string, registered []string, daemonDefault string) (RuntimeChoice, error) {
	registered = slices.Sorted(slices.Values(registered))
	c := RuntimeChoice{Registered: registered, defName: daemonDefault}
	switch {
	case configured == "" || configured == RuntimeAuto:
		c.auto = true
		if slices.Contains(registered, preferredRuntime) {
			c.Name, c.Effective = preferredRuntime, preferredRuntime
			c.Reason = "auto: crun is registered with the daemon"
			return c, nil
		}
		c.Effective = daemonDefault
		c.Reason = "auto: crun is not registered, so the daemon's default (scripts/ensure-docker.sh registers crun)"
		return c, nil
	case slices.Contains(registered, configured):
		c.Name, c.Effective = configured, configured
		c.Reason = "configured"
		return c, nil
	default:
		return c, fmt.Errorf("%w: runtime %q is configured, and the daemon has %s; register it in /etc/docker/daemon.json (\"runtimes\") and reload dockerd (kill -HUP), or set runtime to one of those (or \"auto\")",
			ErrRuntimeMissing, configured, strings.Join(registered, ", "))
	}
}

// Runtime returns the runtime sandboxes run under, asking the daemon the
// first time it answers; a missing configured runtime is ErrRuntimeMissing.
// The answer is kept: a runtime registered later is seen after a restart.
func (b *Backend) Runtime(ctx context.Context) (RuntimeChoice, error) {
	b.runtimeMu.Lock()
	defer b.runtimeMu.Unlock()
	if b.runtime != nil {
		return *b.runtime, nil
	}
	info, err := b.daemonInfo(ctx)
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return RuntimeChoice{}, b.unavailable("asking the daemon for its runtimes", err)
		}
		return RuntimeChoice{}, fmt.Errorf("asking the Docker daemon for its runtimes: %w", err)
	}
	registered := make([]string, 0, len(info.Info.Runtimes))
	for name := range info.Info.Runtimes {
		registered = append(registered, name)
	}
	c, err := chooseRuntime(b.opts.Runtime, registered, info.Info.DefaultRuntime)
	if err != nil {
		return c, err
	}
	b.runtime = &c
	return c, nil
}

// runtimeFailed records that the runtime auto chose could not start a
// container while the daemon's default could: sandboxes use the default from
// now on, and the reason says why.
func (b *Backend) runtimeFailed(failed RuntimeChoice, err error) {
	b.runtimeMu.Lock()
	defer b.runtimeMu.Unlock()
	if b.runtime == nil || b.runtime.Name != failed.Name {
		return
	}
	c := *b.runtime
	c.Name, c.Effective = "", c.defName
	c.Reason = fmt.Sprintf("auto: %s is registered but could not start a sandbox here (%v), so the daemon's default", failed.Name, err)
	b.runtime = &c
	b.log.Warn("sandboxes fall back to the daemon's default runtime", "runtime", failed.Name, "err", err)
}

// checkRuntime is Check's runtime part: a daemon that answers but lacks the
// configured runtime is an operator's mistake, not an outage.
func (b *Backend) checkRuntime(ctx context.Context) error {
	_, err := b.Runtime(ctx)
	if err != nil && !errors.Is(err, sandbox.ErrUnavailable) && !errors.Is(err, ErrRuntimeMissing) {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	return err
}
