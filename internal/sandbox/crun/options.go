// Package crun is the sandbox backend that starts containers with crun
// itself, without a container daemon in between: every run still gets a
// new container of its own (new namespaces, its own cgroup, Docker's
// hardening), but making and removing one costs two crun processes instead
// of the daemon's create, attach, start and remove. The images are the
// local Docker daemon's: each image's layers are shown read-only through
// one overlay mount per image, which the sandboxes share as their root.
//
// It runs where the server runs as root beside a local Docker daemon with
// the overlay2 storage driver. A sandbox's network namespace holds
// loopback alone; network tiers reach the server's egress proxy through
// the agent's relay to a Unix socket, as on the Docker backend.
package crun

import "log/slog"

// Options configure the backend.
type Options struct {
	// AgentPath is the static agent binary, bind-mounted read-only into
	// every sandbox.
	AgentPath string
	// Binary is the crun executable; "" looks it up on PATH.
	Binary string
	// StateDir is where bundles, image roots and crun's state live;
	// "" is DefaultStateDir.
	StateDir string
	// CheckpointTools is the directory of the crun and criu that checkpoint
	// and restore sessions' sandboxes (checkpoint.go); "" is
	// DefaultCheckpointTools, CheckpointToolsOff turns checkpoints off.
	CheckpointTools string
	// CRIUTar is the standalone agent binary, which CRIU then runs as its
	// tar for a sandbox's tmpfs mounts (internal/criutar: one static
	// process instead of GNU tar and gzip for each mount); "" leaves CRIU
	// the system's tar.
	CRIUTar string
	// Runsc is gVisor's runsc, which runs the sandboxes of templates of
	// isolation gvisor; "" offers no gVisor (IsolationSupport says so).
	Runsc string
	// RunscPlatform is gVisor's platform ("" is DefaultRunscPlatform,
	// systrap).
	RunscPlatform string
	// RunscFlags are more flags for runsc, after the backend's own.
	RunscFlags []string
	// FavorCgroupChanges has the host's cgroups favor changes (cgroup v2's
	// favordynmods, favordynmods.go) before the first sandbox: a move into
	// a cgroup, at every sandbox's start and restore, then waits for no RCU
	// grace period. It changes the host until its next boot.
	FavorCgroupChanges bool
	// Logger receives the backend's logs.
	Logger *slog.Logger
}
