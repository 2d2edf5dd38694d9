package server

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
)

// startupChecks logs what would stop runs from working, and removes
// sandboxes a dead server left behind. A configuration the backend cannot
// honour (a runtime the daemon lacks, an engine that cannot set the
// sandboxes' limits) stops the server.
//
// building are the image tags the background builder makes: the log says
// so, instead of calling them missing.
func (s *Server) startupChecks(ctx context.Context, building map[string]bool) error {
	if err := s.backend.Check(ctx); err != nil {
		if errors.Is(err, docker.ErrRuntimeMissing) || errors.Is(err, dockerengine.ErrLimitsUnenforced) {
			return err
		}
		s.log.Error("the sandbox backend is not reachable; run_code will fail until it is", "backend", s.backendChoice, "err", err, "fix", "run `mcp-code-runner doctor`")
		return nil
	}
	if db, ok := s.backend.(*docker.Backend); ok {
		if rt, err := db.Runtime(ctx); err == nil {
			s.log.Info("sandboxes run under OCI runtime "+rt.Effective, "reason", rt.Reason)
		}
	}
	// An isolation the operator asked for that cannot be made here stops
	// the server: it would otherwise refuse every run.
	if iso, _ := sandbox.ParseIsolation(s.cfg.Isolation); iso == sandbox.IsolationGVisor {
		if err := sandbox.IsolationSupport(s.backend, iso); err != nil {
			return fmt.Errorf("isolation gvisor: %w (`mcp-code-runner doctor` says more)", err)
		}
		s.log.Info("every sandbox runs under gVisor's kernel (isolation gvisor)")
	} else if err := sandbox.IsolationSupport(s.backend, sandbox.IsolationGVisor); err == nil {
		s.log.Info("sandboxes are containers (isolation container); a call or session may ask for isolation gvisor, which works here")
	}
	for _, img := range s.reg.Images() {
		if s.reg.Optional(img) {
			continue // built only when asked for
		}
		if building[img.Tag] {
			s.log.Info("runtime image building in the background; runs in its languages wait for it", "image", img.Tag)
			continue
		}
		if err := s.backend.CheckImage(ctx, img.Tag); err != nil && img.OnDemand {
			s.log.Info("on-demand runtime image not built; its languages fail until it is", "image", img.Tag, "build", "mcp-code-runner images build "+img.Name)
		} else if err != nil {
			s.log.Warn("runtime image missing or unusable", "image", img.Tag, "err", err, "fix", "mcp-code-runner images build "+img.Name)
		}
	}
	if n, err := s.backend.Sweep(ctx); err != nil {
		s.log.Warn("sweeping left-behind sandboxes", "err", err)
	} else if n > 0 {
		s.log.Info("removed sandboxes left behind by a previous server", "count", n)
	}
	return nil
}

func (s *Server) sweepLoop(ctx context.Context) {
	t := time.NewTicker(time.Duration(s.cfg.SweepIntervalSeconds) * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.backend.Sweep(ctx); err != nil {
				s.log.Debug("sweep", "err", err)
			}
		}
	}
}

// logPool logs the warm pool's state when it changes, at most every 30 s.
func (s *Server) logPool(ctx context.Context) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	last := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, stat := range s.engine.PoolStats() {
			line := fmt.Sprintf("%+v", stat)
			if line == last[stat.Language] {
				continue
			}
			last[stat.Language] = line
			s.log.Info("warm pool", "language", stat.Language, "idle", stat.Idle, "size", stat.Size, "max_size", stat.MaxSize, "creating", stat.Creating,
				"waiting", stat.Waiting, "served", stat.Served, "waited", stat.Waited, "failures", stat.Failures, "error", stat.Error, "grow_blocked", stat.GrowBlocked)
		}
	}
}
