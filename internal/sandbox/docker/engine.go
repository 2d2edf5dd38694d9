package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
)

// Engine asks the daemon what it is, once.
func (b *Backend) Engine(ctx context.Context) (dockerengine.Engine, error) {
	b.infoMu.Lock()
	if b.engine != nil {
		defer b.infoMu.Unlock()
		return *b.engine, nil
	}
	b.infoMu.Unlock()
	e, err := b.askEngine(ctx)
	if err != nil {
		return e, err
	}
	if dir := b.SocketsDir(); e.Podman() && dir != "" {
		// The engine sees the sockets' directory: it can read a file there.
		if e.SeccompProfile, err = writeDockerSeccomp(dir); err != nil {
			return e, err
		}
	}
	b.infoMu.Lock()
	b.engine = &e
	b.infoMu.Unlock()
	return e, nil
}

// checkLimits refuses an engine that cannot set the sandboxes' resource
// limits unless the operator allows it, in which case it warns once.
func (b *Backend) checkLimits(ctx context.Context) error {
	e, err := b.Engine(ctx)
	if err != nil {
		return fmt.Errorf("asking the daemon what engine it is: %w", err)
	}
	if len(e.Unenforced) == 0 {
		return nil
	}
	if !b.opts.AllowUnenforcedLimits {
		return e.LimitsError()
	}
	b.unenforcedWarning.Do(func() {
		b.log.Warn("sandboxes run without some resource limits, as allow_unenforced_limits permits", "engine", e.String(), "unenforced", strings.Join(e.Unenforced, ", "))
	})
	return nil
}

// cachedEngine is the engine if known, else Docker Engine (what
// ContainerConfig assumes before the daemon has answered).
func (b *Backend) cachedEngine() dockerengine.Engine {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	if b.engine != nil {
		return *b.engine
	}
	return dockerengine.Engine{Kind: "Docker Engine"}
}

func (b *Backend) askEngine(ctx context.Context) (dockerengine.Engine, error) {
	info, err := b.daemonInfo(ctx)
	if err != nil {
		return dockerengine.Engine{}, err
	}
	return dockerengine.Detect(ctx, b.cli, info)
}
