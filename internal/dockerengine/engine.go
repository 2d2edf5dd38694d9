package dockerengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
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
	// Unenforced names the resource limits the engine says it cannot set
	// ("memory", "pids", "CPU"): a rootless engine on a cgroup v1 host runs
	// containers without cgroups and drops these limits without an error.
	Unenforced []string
	// CgroupVersion is the host's cgroup version as the engine reports it.
	CgroupVersion string
}

// ErrLimitsUnenforced refuses sandboxes on an engine that cannot set their
// memory, pids or CPU limits, unless the operator allows it.
var ErrLimitsUnenforced = errors.New("the container engine cannot enforce the sandboxes' resource limits")

// LimitsError is the refusal of an engine that cannot set some limits,
// with why and what to do.
func (e Engine) LimitsError() error {
	why := "its containers get no cgroup limits"
	if e.Rootless && e.CgroupVersion == "1" {
		why = "it is rootless on a host with cgroup v1, so it runs containers without cgroups"
	}
	return fmt.Errorf("%w: %s cannot set the %s limits of a sandbox (%s), so one run could take all the host's memory, processes or CPU. "+
		"Use a rootful engine, or a rootless one on a host booted with cgroup v2 and systemd (docs/SECURITY.md#rootless-docker); "+
		"or, only for code you trust, set allow_unenforced_limits: true in the configuration",
		ErrLimitsUnenforced, e, strings.Join(e.Unenforced, ", "), why)
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
	cgroupVersion   string
	// libpodRootless is Podman's own answer (its libpod API) to whether it
	// runs rootless: Podman 4's Docker-compatible Info does not say.
	libpodRootless bool
	// memoryLimit, pidsLimit and cpuQuota say which limits the engine can
	// set on a container.
	memoryLimit, pidsLimit, cpuQuota bool
}

// classifyEngine tells the engine from what it reports of itself. Podman
// names its own component "Podman Engine"; Docker Desktop runs in a VM
// whose operating system it names "Docker Desktop"; a rootless engine
// lists "name=rootless" among its security options.
func classifyEngine(f engineFacts) Engine {
	e := Engine{Kind: "Docker Engine", Version: f.version, Platform: f.osType + "/" + GoArch(f.architecture)}
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
	if e.Kind == "Podman" && f.libpodRootless {
		e.Rootless = true
	}
	e.CgroupVersion = f.cgroupVersion
	// A rootless engine on cgroup v1 cannot be given a cgroup to manage,
	// whatever its Info claims (rootless Podman reports the host's).
	if e.Rootless && f.cgroupVersion == "1" {
		f.memoryLimit, f.pidsLimit, f.cpuQuota = false, false, false
	}
	for _, l := range []struct {
		name string
		ok   bool
	}{{"memory", f.memoryLimit}, {"pids", f.pidsLimit}, {"CPU", f.cpuQuota}} {
		if !l.ok {
			e.Unenforced = append(e.Unenforced, l.name)
		}
	}
	e.Remote = strings.HasPrefix(f.daemonHost, "tcp://") || strings.HasPrefix(f.daemonHost, "ssh://") ||
		strings.HasPrefix(f.daemonHost, "http://") || strings.HasPrefix(f.daemonHost, "https://")
	return e
}

// IsPodman asks the daemon behind cli whether it is Podman (its
// Docker-compatible API names a Podman component), for code that makes
// containers without a Backend.
func IsPodman(ctx context.Context, cli *client.Client) (bool, error) {
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return false, err
	}
	for _, c := range v.Components {
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			return true, nil
		}
	}
	return false, nil
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

// Detect tells what engine cli talks to from its answers to Version, its
// Info (info, which the caller may have asked already) and, for Podman,
// its own libpod API.
func Detect(ctx context.Context, cli *client.Client, info client.SystemInfoResult) (Engine, error) {
	v, err := cli.ServerVersion(ctx, client.ServerVersionOptions{})
	if err != nil {
		return Engine{}, err
	}
	f := engineFacts{
		daemonHost:      cli.DaemonHost(),
		operatingSystem: info.Info.OperatingSystem,
		osType:          info.Info.OSType,
		architecture:    info.Info.Architecture,
		securityOptions: info.Info.SecurityOptions,
		version:         v.Version,
		cgroupVersion:   info.Info.CgroupVersion,
		memoryLimit:     info.Info.MemoryLimit,
		pidsLimit:       info.Info.PidsLimit,
		cpuQuota:        info.Info.CPUCfsQuota,
	}
	for _, c := range v.Components {
		f.components = append(f.components, c.Name)
		if strings.Contains(strings.ToLower(c.Name), "podman") {
			if f.libpodRootless, err = libpodRootless(ctx, cli); err != nil {
				return Engine{}, fmt.Errorf("asking Podman whether it runs rootless: %w", err)
			}
		}
	}
	return classifyEngine(f), nil
}

// libpodRootless asks Podman's own API whether it runs rootless, which its
// Docker-compatible Info leaves out (Podman 4.3 lists no "name=rootless"
// and claims the host's cgroup controllers); the limits depend on it.
func libpodRootless(ctx context.Context, cli *client.Client) (bool, error) {
	dial := cli.Dialer()
	hc := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+client.DummyHost+"/v4.0.0/libpod/info", nil)
	if err != nil {
		return false, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, fmt.Errorf("GET /libpod/info answered %s", resp.Status)
	}
	var info struct {
		Host struct {
			Security struct {
				Rootless bool `json:"rootless"`
			} `json:"security"`
		} `json:"host"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 4<<20)).Decode(&info); err != nil {
		return false, fmt.Errorf("reading /libpod/info: %w", err)
	}
	return info.Host.Security.Rootless, nil
}
