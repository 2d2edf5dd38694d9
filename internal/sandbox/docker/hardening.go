package docker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// tmpfsInodes is the most files and directories each tmpfs may hold.
const tmpfsInodes = 65536

// expiryMargin is added to a run's deadline for its expiry label: a container
// past it is removed by any server's sweep.
const expiryMargin = 2 * time.Minute

// ContainerConfig returns the hardened configuration of a sandbox for spec.
// It is exported so tests can assert every control.
func (b *Backend) ContainerConfig(t sandbox.Template) (*container.Config, *container.HostConfig) {
	r := t.Resources
	memory := int64(sandbox.HostMemoryMB(t.Isolation, r)) << 20
	pids := int64(sandbox.HostPids(t.Isolation, r))
	expires := time.Now().Add(t.MaxLife + expiryMargin).Unix()
	labels := map[string]string{
		LabelManaged:   "true",
		LabelOwner:     b.owner.ID,
		LabelOwnerHost: b.owner.Host,
		LabelOwnerPID:  strconv.Itoa(b.owner.PID),
		LabelOwnerBoot: b.owner.Start,
		LabelInstance:  t.Instance,
		LabelExpires:   strconv.FormatInt(expires, 10),
		LabelPurpose:   t.Purpose,
	}
	if t.ReattachGrace > 0 && b.keep.Store != "" {
		labels[LabelStore] = b.keep.Store
	}
	cfg := &container.Config{
		Image:           t.Image,
		Cmd:             []string{AgentPath, "agent"},
		Entrypoint:      []string{},
		User:            wire.SandboxUser,
		WorkingDir:      wire.WorkspacePath,
		Env:             sandbox.AgentEnv(t),
		OpenStdin:       true,
		StdinOnce:       true,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		NetworkDisabled: true,
		Labels:          labels,
	}
	// No separate init: the agent is PID 1 (it reaps orphans, and nothing
	// else then holds the container's output stream; see agent.BecomeInit).
	noInit := false
	// Podman refuses nr_inodes (dockerengine.Engine.Limits says what bounds files there)
	// and uid=/gid=; its own U gives the tmpfs to the container's user.
	podman := b.cachedEngine().Podman()
	inodes := fmt.Sprintf(",nr_inodes=%d", tmpfsInodes)
	if podman {
		inodes = ""
	}
	owner := dockerengine.TmpfsOwner(podman)
	host := &container.HostConfig{
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Init:           &noInit,
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		Tmpfs: map[string]string{
			// nr_inodes bounds the files too: a flood of empty files then gets
			// ENOSPC instead of spending the memory limit on inodes.
			"/tmp":             fmt.Sprintf("rw,nosuid,nodev,size=%dm%s,mode=1777", r.TmpMB, inodes),
			wire.WorkspacePath: fmt.Sprintf("rw,nosuid,nodev,exec,size=%dm%s,%s,mode=0755", r.WorkspaceMB, inodes, owner),
		},
		ShmSize: 16 << 20,
		Mounts:  []mount.Mount{b.agentMount()},
		Resources: container.Resources{
			Memory:     memory,
			MemorySwap: memory,
			NanoCPUs:   int64(r.CPUs * 1e9),
			PidsLimit:  &pids,
			// The agent applies nofile and fsize itself (wire.Limits); set
			// here too, they bind it from its first instruction.
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: int64(r.NoFile), Hard: int64(r.NoFile)},
				{Name: "fsize", Soft: int64(r.FileSizeMB) << 20, Hard: int64(r.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	if t.Isolation.Or() == sandbox.IsolationGVisor {
		if b.annotatesRuntime() {
			// The daemon hands its runtime a container's annotations in
			// its OCI configuration.
			host.Annotations = map[string]string{sandbox.GVisorPidsMaxAnnotation: sandbox.GVisorPidsMax(r)}
		} else {
			// An older daemon drops them: gVisor's RLIMIT_NPROC, which
			// counts the sandbox user's tasks, bounds the programs instead
			// (no pids.events counts its refusals).
			n := int64(r.PidsLimit)
			host.Resources.Ulimits = append(host.Resources.Ulimits, &container.Ulimit{Name: "nproc", Soft: n, Hard: n})
		}
	}
	if e := b.cachedEngine(); e.Podman() {
		host.Resources.Ulimits = append(host.Resources.Ulimits, &container.Ulimit{Name: "nproc", Soft: dockerengine.PodmanNproc, Hard: dockerengine.PodmanNproc})
		if e.SeccompProfile != "" {
			host.SecurityOpt = append(host.SecurityOpt, "seccomp="+e.SeccompProfile)
		}
	}
	for _, m := range t.Mounts {
		host.Mounts = append(host.Mounts, mount.Mount{Type: mount.TypeBind, Source: m.Source, Target: m.Target, ReadOnly: !m.Writable,
			BindOptions: &mount.BindOptions{NonRecursive: true}})
	}
	return cfg, host
}

// annotatesRuntime says whether the daemon hands a container's annotations
// to its runtime: Docker's API 1.43 and later (HostConfig.Annotations), as
// the client negotiated it.
func (b *Backend) annotatesRuntime() bool {
	major, minor, ok := strings.Cut(b.cli.ClientVersion(), ".")
	if !ok {
		return false
	}
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(minor)
	return err1 == nil && err2 == nil && (ma > 1 || ma == 1 && mi >= 43)
}
