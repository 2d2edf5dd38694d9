package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
)

// autoCheckTimeout bounds the crun backend's check when "auto" chooses:
// the Docker daemon's ping and info.
const autoCheckTimeout = 15 * time.Second

// autoBackend makes the backend "auto" stands for: crun, which starts each
// sandbox itself (about twice the runs a second of the Docker backend,
// docs/PERFORMANCE.md), wherever it can serve; else docker. choice says
// which and why, for the start-up log and doctor.
func autoBackend(cfg config.Config, log *slog.Logger) (b sandbox.Backend, choice string, err error) {
	why := crun.Refusal(cfg, runtime.GOOS, os.Geteuid(), os.Getenv("DOCKER_HOST"))
	if why == "" {
		cb, err := newCrunBackend(cfg, log)
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), autoCheckTimeout)
			err = cb.Check(ctx)
			cancel()
			if err == nil {
				return cb, fmt.Sprintf("crun (auto: root, %s, local Docker overlay2)", cb.Version()), nil
			}
			_ = cb.Close()
		}
		why = strings.TrimPrefix(err.Error(), sandbox.ErrUnavailable.Error()+": ")
	}
	db, err := newDockerBackend(cfg, log)
	if err != nil {
		return nil, "", err
	}
	return db, "docker (auto: " + why + ")", nil
}
