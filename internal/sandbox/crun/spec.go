//go:build linux

package crun

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/moby/profiles/seccomp"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// AgentDir is where every sandbox sees the agent, as on the Docker backend.
const AgentDir = "/opt/mcp-code-runner"

// AgentPath is the agent binary inside a sandbox.
const AgentPath = AgentDir + "/agent"

// tmpfsInodes is the most files and directories each tmpfs may hold, as on
// the Docker backend: a flood of empty files gets ENOSPC instead of
// spending the memory limit on inodes.
const tmpfsInodes = 65536

// shmMB is the size of /dev/shm, Docker's --shm-size of the other backend.
const shmMB = 16

// ociVersion is the runtime specification the configuration follows:
// Debian's crun 1.8 takes 1.0 configurations only (it refuses "1.2.1"),
// and nothing here needs a later one.
const ociVersion = "1.0.2"

// cgroupParent is the cgroup under which every sandbox gets its own.
const cgroupParent = "/mcp-code-runner"

// maskedPaths and readonlyPaths are Docker's defaults (moby's oci
// package): kernel files a container must not read or write.
var (
	maskedPaths = []string{
		"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
		"/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware",
		"/sys/devices/virtual/powercap",
	}
	readonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// sandboxSpec is what a sandbox's OCI configuration is made from beside
// its template.
type sandboxSpec struct {
	// ID names the container; Hostname is the sandbox's host name.
	ID, Hostname string
	// Rootfs is the image's root, shown read-only.
	Rootfs string
	// ImageEnv is the image's environment, which the template's overrides.
	ImageEnv []string
	// Agent is the agent binary on the host, bind-mounted read-only.
	Agent string
	// Hosts is the /etc/hosts file every sandbox sees (localhost only).
	Hosts string
	// HostnameFile is the sandbox's own /etc/hostname: the image's holds
	// the name of the machine that built it.
	HostnameFile string
	// EgressDir, for a sandbox with network access, holds its egress
	// proxy's socket, shown read-only at sandbox.EgressDir; EgressEnv is
	// the agent's entry that tells it to relay to it. Both "" without.
	EgressDir, EgressEnv string
	// AgentSocketDir, for a sandbox that outlives its server (a
	// session's), holds the socket its agent dials, shown read-only at
	// agentSocketMount; AgentSocketEnv are the agent's entries that name
	// the socket and its grace. "" and nil for any other sandbox.
	AgentSocketDir string
	AgentSocketEnv []string
	// AgentLogDir, with AgentSocketDir, holds the agent's log, shown at
	// agentLogMount.
	AgentLogDir string
	// GVisor says the sandbox runs under gVisor's runsc: its cgroup holds
	// gVisor's kernel, and its programs' pids limit is the pids.max of its
	// cgroup inside gVisor (sandbox.GVisorPidsMaxAnnotation).
	GVisor bool
	// UserNamespace puts the sandbox in a user namespace of its own, IDs
	// mapped as they are (checkpoint.go says why).
	UserNamespace bool
	// CgroupControllers, for a sandbox with a UserNamespace on cgroup v1,
	// are the controllers' directories under /sys/fs/cgroup: the sandbox
	// sees its own cgroup's directory in each through a bind mount, which
	// a restore keeps (CRIU would mount its own cgroup there instead).
	// Empty on cgroup v2, where the one hierarchy is bound.
	CgroupControllers []string
	// Masks, for a sandbox with a UserNamespace, are the backend's
	// read-only tmpfs mounts that stand in for the tmpfs mounts crun
	// would make of the sandbox's own (masks.go); nil keeps those.
	Masks *masks
}

// Spec returns the hardened OCI configuration of a sandbox for t: the
// controls of the Docker backend's ContainerConfig, the same ones, set in
// the runtime's own terms. Every namespace is new (the network one holds
// only loopback); no capability, no new privileges, Docker's default
// seccomp profile, a read-only root, the limits in the sandbox's own
// cgroup. It is exported so tests can assert every control.
func Spec(t sandbox.Template, s sandboxSpec) (*specs.Spec, error) {
	r := t.Resources
	memory := int64(r.MemoryMB) << 20
	pids := int64(r.PidsLimit)
	if s.GVisor {
		memory = int64(sandbox.HostMemoryMB(sandbox.IsolationGVisor, r)) << 20
		pids = int64(sandbox.HostPids(sandbox.IsolationGVisor, r))
	}
	const period = 100000
	quota := int64(r.CPUs * period)
	noSuidDev := []string{"nosuid", "nodev"}
	tmpfs := func(dst string, sizeMB int, extra ...string) specs.Mount {
		opts := append(append([]string{}, noSuidDev...), fmt.Sprintf("size=%dm", sizeMB), fmt.Sprintf("nr_inodes=%d", tmpfsInodes))
		return specs.Mount{Destination: dst, Type: "tmpfs", Source: "tmpfs", Options: append(opts, extra...)}
	}
	mounts := []specs.Mount{
		{Destination: "/proc", Type: "proc", Source: "proc", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/dev", Type: "tmpfs", Source: "tmpfs", Options: []string{"nosuid", "strictatime", "mode=755", "size=65536k"}},
		{Destination: "/dev/pts", Type: "devpts", Source: "devpts", Options: []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}},
		{Destination: "/dev/shm", Type: "tmpfs", Source: "shm", Options: []string{"nosuid", "noexec", "nodev", "mode=1777", fmt.Sprintf("size=%dm", shmMB)}},
		{Destination: "/dev/mqueue", Type: "mqueue", Source: "mqueue", Options: []string{"nosuid", "noexec", "nodev"}},
		{Destination: "/sys", Type: "sysfs", Source: "sysfs", Options: []string{"nosuid", "noexec", "nodev", "ro"}},
		{Destination: "/sys/fs/cgroup", Type: "cgroup", Source: "cgroup", Options: []string{"nosuid", "noexec", "nodev", "relatime", "ro"}},
		tmpfs("/tmp", r.TmpMB, "mode=1777"),
		tmpfs(wire.WorkspacePath, r.WorkspaceMB, "exec", fmt.Sprintf("uid=%d", wire.SandboxUID), fmt.Sprintf("gid=%d", wire.SandboxGID), "mode=0755"),
		{Destination: AgentPath, Type: "bind", Source: s.Agent, Options: []string{"rbind", "ro", "nosuid", "nodev"}},
		{Destination: "/etc/hosts", Type: "bind", Source: s.Hosts, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}},
		{Destination: "/etc/hostname", Type: "bind", Source: s.HostnameFile, Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}},
	}
	env := append(sandbox.AgentEnv(t), "HOSTNAME="+s.Hostname)
	if s.EgressDir != "" {
		mounts = append(mounts, specs.Mount{Destination: sandbox.EgressDir, Type: "bind", Source: s.EgressDir,
			Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}})
		env = append(env, s.EgressEnv)
	}
	if s.AgentSocketDir != "" {
		mounts = append(mounts, specs.Mount{Destination: agentSocketMount, Type: "bind", Source: s.AgentSocketDir,
			Options: []string{"rbind", "ro", "nosuid", "nodev", "noexec"}},
			specs.Mount{Destination: agentLogMount, Type: "bind", Source: s.AgentLogDir,
				Options: []string{"bind", "rw", "nosuid", "nodev", "noexec"}})
		env = append(env, s.AgentSocketEnv...)
	}
	for _, m := range t.Mounts {
		opts := []string{"bind", "nosuid", "nodev"}
		if !m.Writable {
			opts = append(opts, "ro")
		}
		mounts = append(mounts, specs.Mount{Destination: m.Target, Type: "bind", Source: m.Source, Options: opts})
	}
	rlimits := []specs.POSIXRlimit{
		// The agent applies nofile and fsize itself (wire.Limits); set
		// here too, they bind it from its first instruction.
		{Type: "RLIMIT_NOFILE", Hard: uint64(r.NoFile), Soft: uint64(r.NoFile)},
		{Type: "RLIMIT_FSIZE", Hard: uint64(r.FileSizeMB) << 20, Soft: uint64(r.FileSizeMB) << 20},
		{Type: "RLIMIT_CORE", Hard: 0, Soft: 0},
	}
	umask := uint32(0o022)
	spec := &specs.Spec{
		Version:  ociVersion,
		Hostname: s.Hostname,
		Root:     &specs.Root{Path: s.Rootfs, Readonly: true},
		Process: &specs.Process{
			// No separate init: the agent is PID 1, as on the Docker backend
			// (it reaps orphans; see agent.BecomeInit).
			Args:            []string{AgentPath, "agent"},
			Env:             mergeEnv(s.ImageEnv, env),
			Cwd:             wire.WorkspacePath,
			User:            specs.User{UID: wire.SandboxUID, GID: wire.SandboxGID, Umask: &umask},
			NoNewPrivileges: true,
			// Every set empty: the sandbox's processes have no capability.
			Capabilities: &specs.LinuxCapabilities{},
			Rlimits:      rlimits,
		},
		Mounts: mounts,
		Linux: &specs.Linux{
			Namespaces: []specs.LinuxNamespace{
				{Type: specs.PIDNamespace}, {Type: specs.NetworkNamespace}, {Type: specs.IPCNamespace},
				{Type: specs.UTSNamespace}, {Type: specs.MountNamespace}, {Type: specs.CgroupNamespace},
			},
			CgroupsPath: cgroupParent + "/" + s.ID,
			Resources: &specs.LinuxResources{
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
				Memory:  &specs.LinuxMemory{Limit: &memory, Swap: &memory},
				CPU:     &specs.LinuxCPU{Quota: &quota, Period: new(uint64(period))},
				Pids:    &specs.LinuxPids{Limit: pids},
			},
			MaskedPaths:   maskedPaths,
			ReadonlyPaths: readonlyPaths,
		},
	}
	if s.UserNamespace {
		// No cgroup namespace: CRIU restores one rooted at its own cgroup,
		// not the sandbox's, so the sandbox would read another cgroup's
		// counters (its OOM kills). Without it the sandbox's cgroup mounts
		// are its own cgroup's directories, which a restore keeps.
		spec.Linux.Namespaces = slices.DeleteFunc(spec.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.CgroupNamespace })
		spec.Mounts = slices.DeleteFunc(spec.Mounts, func(m specs.Mount) bool { return m.Type == "cgroup" })
		own := []string{"bind", "ro", "nosuid", "nodev", "noexec"}
		switch {
		case len(s.CgroupControllers) == 0:
			spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/sys/fs/cgroup", Type: "bind",
				Source: filepath.Join("/sys/fs/cgroup", cgroupParent, s.ID), Options: own})
		default:
			if s.Masks != nil && s.Masks.cgroupDir != "" {
				spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/sys/fs/cgroup", Type: "bind", Source: s.Masks.cgroupDir, Options: own})
			} else {
				spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/sys/fs/cgroup", Type: "tmpfs", Source: "cgroup",
					Options: []string{"nosuid", "nodev", "noexec", "mode=755", "size=1024k"}})
			}
			for _, c := range s.CgroupControllers {
				spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/sys/fs/cgroup/" + c, Type: "bind",
					Source: filepath.Join("/sys/fs/cgroup", c, cgroupParent, s.ID), Options: own})
			}
		}
		spec.Linux.Namespaces = append(spec.Linux.Namespaces, specs.LinuxNamespace{Type: specs.UserNamespace})
		spec.Linux.UIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: identityMapSize}}
		spec.Linux.GIDMappings = []specs.LinuxIDMapping{{ContainerID: 0, HostID: 0, Size: identityMapSize}}
		for _, d := range []string{"null", "zero", "full", "random", "urandom", "tty"} {
			spec.Mounts = append(spec.Mounts, specs.Mount{Destination: "/dev/" + d, Type: "bind", Source: "/dev/" + d,
				Options: []string{"bind", "nosuid", "noexec"}})
		}
		if s.Masks != nil {
			spec.Linux.MaskedPaths = slices.DeleteFunc(slices.Clone(spec.Linux.MaskedPaths), func(p string) bool { return slices.Contains(s.Masks.dirs, p) })
			for _, d := range s.Masks.dirs {
				spec.Mounts = append(spec.Mounts, specs.Mount{Destination: d, Type: "bind", Source: s.Masks.emptyDir, Options: own})
			}
			if s.Masks.devDir != "" {
				// In place: /dev/pts, /dev/shm and the rest are mounted on it.
				if i := slices.IndexFunc(spec.Mounts, func(m specs.Mount) bool { return m.Destination == "/dev" }); i >= 0 {
					spec.Mounts[i] = specs.Mount{Destination: "/dev", Type: "bind", Source: s.Masks.devDir, Options: own}
				}
			}
		}
	}
	sc, err := seccomp.GetDefaultProfile(spec)
	if err != nil {
		return nil, fmt.Errorf("the seccomp profile (Docker's default): %w", err)
	}
	if s.GVisor {
		allowClone3(sc)
		spec.Annotations = map[string]string{sandbox.GVisorPidsMaxAnnotation: sandbox.GVisorPidsMax(r)}
	}
	spec.Linux.Seccomp = sc
	return spec, nil
}

// allowClone3 lets a gVisor sandbox's programs call clone3. Docker's
// profile answers it with ENOSYS, so that glibc falls back to clone, whose
// flags the profile can check; gVisor applies every errno rule as EPERM,
// after which glibc does not fall back, and no thread can be made (node
// does not start). Under gVisor clone3 reaches gVisor's kernel, not the
// host's, and any namespace it makes is gVisor's own.
func allowClone3(sc *specs.LinuxSeccomp) {
	for i := range sc.Syscalls {
		rule := &sc.Syscalls[i]
		if rule.Action != specs.ActErrno || !slices.Contains(rule.Names, "clone3") {
			continue
		}
		rule.Names = slices.DeleteFunc(slices.Clone(rule.Names), func(n string) bool { return n == "clone3" })
		sc.Syscalls = append(sc.Syscalls, specs.LinuxSyscall{Names: []string{"clone3"}, Action: specs.ActAllow})
		return
	}
}

// identityMapSize is how many user and group IDs a sandbox's own user
// namespace maps to themselves: every ID an image's files or the sandbox's
// user have.
const identityMapSize = 65536

// mergeEnv is base with every entry of over set (over wins for a name), in
// base's order and then over's new names, as Docker merges an image's
// environment with a container's.
func mergeEnv(base, over []string) []string {
	name := func(kv string) string {
		if before, _, ok := strings.Cut(kv, "="); ok {
			return before
		}
		return kv
	}
	overs := make(map[string]string, len(over))
	for _, kv := range over {
		overs[name(kv)] = kv
	}
	out := make([]string, 0, len(base)+len(over))
	seen := make(map[string]bool, len(base))
	for _, kv := range base {
		n := name(kv)
		seen[n] = true
		if o, ok := overs[n]; ok {
			out = append(out, o)
			continue
		}
		out = append(out, kv)
	}
	for _, kv := range over {
		if n := name(kv); !seen[n] {
			seen[n] = true
			out = append(out, kv)
		}
	}
	return out
}
