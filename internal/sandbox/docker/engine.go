package docker

import (
	"context"
	"fmt"
	"strings"

	"github.com/moby/moby/client"
)

// Engine describes the container engine behind the Docker API: what it is,
// where it runs and for which platform, so that doctor and the logs can say
// which set-up the server runs on.
type Engine struct {
	// Kind is "Docker Engine", "Docker Desktop", "Podman" or the
	// engine's own name.
	Kind string
	// Version is the engine's version.
	Version string
	// Rootless says the engine runs as an unprivileged user.
	Rootless bool
	// Remote says the server reaches the engine over the network
	// (tcp:// or ssh://), not through a local socket.
	Remote bool
	// Platform is the engine's, as os/architecture.
	Platform string
	// SeccompProfile is the file of Docker's default seccomp profile that
	// sandboxes on Podman run under, or "" (Docker applies it itself).
	SeccompProfile string
}

// String names the engine the way doctor prints it, e.g. "Docker Engine
// 28.1 (rootless, local, linux/amd64)".
func (e Engine) String() string {
	mode := "rootful"
	if e.Rootless {
		mode = "rootless"
	}
	where := "local"
	if e.Remote {
		where = "remote"
	}
	return fmt.Sprintf("%s %s (%s, %s, %s)", e.Kind, e.Version, mode, where, e.Platform)
}

// engineFacts are the answers an engine's Info and Version give that tell
// engines apart.
type engineFacts struct {
	daemonHost      string
	operatingSystem string
	osType          string
	architecture    string
	securityOptions []string
	version         string
	components      []string
}

// classifyEngine tells the engine from what it reports of itself. Podman
// names its own component "Podman Engine"; Docker Desktop runs in a VM
// whose operating system it names "Docker Desktop"; a rootless engine
// lists "name=rootless" among its security options.
func classifyEngine(f engineFacts) Engine {
	e := Engine{Kind: "Docker Engine", Version: f.version, Platform: f.osType + "/" + goArch(f.architecture)}
	for _, c := range f.components {
		if strings.Contains(strings.ToLower(c), "podman") {
			e.Kind = "Podman"
		}
	}
	if e.Kind != "Podman" && strings.Contains(f.operatingSystem, "Docker Desktop") {
		e.Kind = "Docker Desktop"
	}
	for _, o := range f.securityOptions {
		if strings.Contains(o, "name=rootless") {
			e.Rootless = true
		}
	}
	e.Remote = strings.HasPrefix(f.daemonHost, "tcp://") || strings.HasPrefix(f.daemonHost, "ssh://") ||
		strings.HasPrefix(f.daemonHost, "http://") || strings.HasPrefix(f.daemonHost, "https://")
	return e
}

// Podman says the engine is Podman, whose Docker-compatible API refuses
// some of Docker's options.
func (e Engine) Podman() bool { return e.Kind == "Podman" }

// Limits names the hardening controls this engine cannot apply, each with
// why and what bounds the same thing instead; none for Docker.
func (e Engine) Limits() []string {
	if !e.Podman() {
		return nil
	}
	limits := []string{"the tmpfs inode limit (nr_inodes) is not set: Podman's API refuses the option; the number of files in /tmp and /workspace is bounded by the tmpfs size and the sandbox's memory limit instead (a flood of empty files ends in the memory limit's kill, not in ENOSPC)"}
	if e.SeccompProfile == "" {
		limits = append(limits, "Podman's own seccomp profile is in force, which lets a process without capabilities call unshare and setns (new user, mount and network namespaces): Docker's default profile, which refuses them, is given to Podman as a file, and this engine cannot see the server's files (sockets off)")
	}
	return limits
}

// Engine asks the daemon what it is, once.
func (b *Backend) Engine(ctx context.Context) (Engine, error) {
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

// cachedEngine is the engine if known, else Docker Engine (what
// ContainerConfig assumes before the daemon has answered).
func (b *Backend) cachedEngine() Engine {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	if b.engine != nil {
		return *b.engine
	}
	return Engine{Kind: "Docker Engine"}
}

func (b *Backend) askEngine(ctx context.Context) (Engine, error) {
	info, err := b.daemonInfo(ctx)
	if err != nil {
		return Engine{}, err
	}
	v, err := b.cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return Engine{}, err
	}
	f := engineFacts{
		daemonHost:      b.cli.DaemonHost(),
		operatingSystem: info.Info.OperatingSystem,
		osType:          info.Info.OSType,
		architecture:    info.Info.Architecture,
		securityOptions: info.Info.SecurityOptions,
		version:         v.Version,
	}
	for _, c := range v.Components {
		f.components = append(f.components, c.Name)
	}
	return classifyEngine(f), nil
}
