package main

import (
	"os"
	"runtime"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
)

// checkpoint says whether paused sessions are checkpointed here (CRIU,
// through the crun backend and the checkpoint tools), and what a pause
// does when they are not.
func (d *doctor) checkpoint(cfg config.Config) {
	if why := crun.CheckCheckpointTools(cfg.Sessions.CheckpointTools); why != nil {
		d.info("pause_session keeps a session's files and replays its cells on resume; checkpoints of its memory are unavailable: %v", why)
		return
	}
	onCrun := cfg.Backend == config.BackendCrun ||
		(cfg.Backend == "" || cfg.Backend == config.BackendAuto) && crun.Refusal(cfg, runtime.GOOS, os.Geteuid(), os.Getenv("DOCKER_HOST")) == ""
	if !onCrun {
		d.info("the checkpoint tools work on this host, but sessions run on a backend other than crun here, which is not checkpointed: pause_session replays cells")
		return
	}
	d.info("pause_session checkpoints a session's sandbox (CRIU: its processes' memory and its files) and restores it exactly on resume; sessions with network access, packages or secrets replay their cells")
}
