//go:build linux

package crun

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func mountAt(spec *specs.Spec, dst string) *specs.Mount {
	for i := range spec.Mounts {
		if spec.Mounts[i].Destination == dst {
			return &spec.Mounts[i]
		}
	}
	return nil
}

func hasOptions(m *specs.Mount, opts ...string) bool {
	if m == nil {
		return false
	}
	for _, o := range opts {
		if !slices.Contains(m.Options, o) {
			return false
		}
	}
	return true
}

// TestSpecIsHardened asserts every control of a crun sandbox, the same
// ones as the Docker backend's TestContainerConfigIsHardened.
func TestSpecIsHardened(t *testing.T) {
	spec, err := Spec(sandbox.Template{
		Image: "img", Purpose: "r1", MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 256, CPUs: 1.5, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8},
	}, sandboxSpec{ID: "mcr-1-2-3-abc", Hostname: "abc", Rootfs: "/r", ImageEnv: []string{"LANG=C.UTF-8", "PATH=/image"}, Agent: "/host/agent", Hosts: "/h", HostnameFile: "/b/hostname"})
	if err != nil {
		t.Fatal(err)
	}
	var nsTypes []specs.LinuxNamespaceType
	for _, ns := range spec.Linux.Namespaces {
		if ns.Path != "" {
			t.Errorf("namespace %s joins %s: every namespace must be new", ns.Type, ns.Path)
		}
		nsTypes = append(nsTypes, ns.Type)
	}
	p, r := spec.Process, spec.Linux.Resources
	c := p.Capabilities
	checks := []struct {
		name string
		ok   bool
	}{
		{"new pid, network (loopback only), ipc, uts, mount and cgroup namespaces", len(nsTypes) == 6 && slices.Contains(nsTypes, specs.PIDNamespace) &&
			slices.Contains(nsTypes, specs.NetworkNamespace) && slices.Contains(nsTypes, specs.IPCNamespace) && slices.Contains(nsTypes, specs.UTSNamespace) &&
			slices.Contains(nsTypes, specs.MountNamespace) && slices.Contains(nsTypes, specs.CgroupNamespace)},
		{"no user namespace shared with the host's root mapping", !slices.Contains(nsTypes, specs.UserNamespace) && len(spec.Linux.UIDMappings) == 0},
		{"all capabilities dropped", c != nil && len(c.Bounding)+len(c.Effective)+len(c.Permitted)+len(c.Inheritable)+len(c.Ambient) == 0},
		{"no-new-privileges", p.NoNewPrivileges},
		{"Docker's default seccomp profile", spec.Linux.Seccomp != nil && spec.Linux.Seccomp.DefaultAction == specs.ActErrno && len(spec.Linux.Seccomp.Syscalls) > 10},
		{"read-only root", spec.Root.Readonly && spec.Root.Path == "/r"},
		{"tmpfs /tmp sized", hasOptions(mountAt(spec, "/tmp"), "nosuid", "nodev", "size=16m", "nr_inodes=65536", "mode=1777") && mountAt(spec, "/tmp").Type == "tmpfs"},
		{"tmpfs /workspace sized, the sandbox user's", hasOptions(mountAt(spec, "/workspace"), "nosuid", "nodev", "exec", "size=32m", "nr_inodes=65536", "uid=10001", "gid=10001", "mode=0755")},
		{"/dev/shm 16 MiB, noexec", hasOptions(mountAt(spec, "/dev/shm"), "noexec", "nosuid", "nodev", "size=16m")},
		{"/sys and its cgroups read-only", hasOptions(mountAt(spec, "/sys"), "ro") && hasOptions(mountAt(spec, "/sys/fs/cgroup"), "ro")},
		{"agent mounted read-only", hasOptions(mountAt(spec, AgentPath), "ro", "nosuid") && mountAt(spec, AgentPath).Source == "/host/agent"},
		{"/etc/hosts read-only", hasOptions(mountAt(spec, "/etc/hosts"), "ro") && mountAt(spec, "/etc/hosts").Source == "/h"},
		{"its own /etc/hostname, read-only", hasOptions(mountAt(spec, "/etc/hostname"), "ro") && mountAt(spec, "/etc/hostname").Source == "/b/hostname"},
		{"non-root user", p.User.UID == wire.SandboxUID && p.User.GID == wire.SandboxGID},
		{"pids limit", r.Pids != nil && r.Pids.Limit == 64},
		{"memory = memory+swap", r.Memory != nil && *r.Memory.Limit == 256<<20 && *r.Memory.Swap == 256<<20},
		{"cpu quota", r.CPU != nil && *r.CPU.Quota == 150000 && *r.CPU.Period == 100000},
		{"no device but the runtime's defaults", len(r.Devices) == 1 && !r.Devices[0].Allow && r.Devices[0].Access == "rwm" && len(spec.Linux.Devices) == 0},
		{"the sandbox's own cgroup", spec.Linux.CgroupsPath == "/mcp-code-runner/mcr-1-2-3-abc"},
		{"the agent's own limits", slices.Contains(p.Env, wire.LimitsEnv+`={"nofile":512,"fsize_bytes":8388608}`)},
		{"rlimits", reflect.DeepEqual(p.Rlimits, []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 512, Soft: 512}, {Type: "RLIMIT_FSIZE", Hard: 8 << 20, Soft: 8 << 20}, {Type: "RLIMIT_CORE"}})},
		{"agent is the init", p.Args[0] == AgentPath && p.Cwd == wire.WorkspacePath},
		{"kernel files masked", slices.Contains(spec.Linux.MaskedPaths, "/proc/kcore") && slices.Contains(spec.Linux.ReadonlyPaths, "/proc/sys")},
		{"the image's environment under the sandbox's", slices.Contains(p.Env, "LANG=C.UTF-8") && !slices.Contains(p.Env, "PATH=/image") && slices.Contains(p.Env, "HOSTNAME=abc")},
		{"a 1.0 configuration, which Debian's crun takes", strings.HasPrefix(spec.Version, "1.0.")},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: not set", c.name)
		}
	}
}

func TestMergeEnvLetsTheSandboxOverrideTheImage(t *testing.T) {
	tests := []struct {
		name       string
		base, over []string
		want       []string
	}{
		{"the image alone", []string{"A=1", "B=2"}, nil, []string{"A=1", "B=2"}},
		{"an override keeps the image's order", []string{"A=1", "B=2"}, []string{"B=3"}, []string{"A=1", "B=3"}},
		{"new names come after", []string{"A=1"}, []string{"C=3", "A=2"}, []string{"A=2", "C=3"}},
		{"a value holding '=' is one value", []string{"A=x=y"}, []string{"B=p=q"}, []string{"A=x=y", "B=p=q"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mergeEnv(tt.base, tt.over); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("mergeEnv(%q, %q) = %q, want %q", tt.base, tt.over, got, tt.want)
			}
		})
	}
}

func TestParseIDReadsOwnerAndExpiryFromTheName(t *testing.T) {
	tests := []struct {
		name string
		id   string
		ok   bool
		want sandboxID
	}{
		{"a sandbox's name", "mcr-4242-99887-0badcafe-1800000000-a1b2c3d4e5f6", true, sandboxID{pid: "4242", start: "99887", hostTag: "0badcafe", expires: time.Unix(1800000000, 0)}},
		{"a name without a host tag, as older servers made them", "mcr-4242-99887-1800000000-a1b2c3d4e5f6", true, sandboxID{pid: "4242", start: "99887", expires: time.Unix(1800000000, 0)}},
		{"another prefix", "xyz-4242-99887-1800000000-a1b2", false, sandboxID{}},
		{"too few parts", "mcr-4242-1800000000-a1b2", false, sandboxID{}},
		{"a PID that is not a number", "mcr-x-99887-1800000000-a1b2", false, sandboxID{}},
		{"an expiry that is not a number", "mcr-1-2-soon-a1b2", false, sandboxID{}},
		{"too many parts", "mcr-1-2-3-4-1800000000-a1b2", false, sandboxID{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := parseID(tt.id)
			if ok != tt.ok || (ok && got != tt.want) {
				t.Errorf("parseID(%q) = %+v, %v; want %+v, %v", tt.id, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestNewIDIsParsedBack(t *testing.T) {
	b := &Backend{owner: sandbox.Owner{Host: "host-a", PID: 123, Start: "456"}}
	id, host := b.newID(time.Minute)
	s, ok := parseID(id)
	if !ok || s.pid != "123" || s.start != "456" || s.hostTag != b.owner.HostTag() || !strings.HasSuffix(id, "-"+host) || s.expires.Before(time.Now().Add(time.Minute)) {
		t.Errorf("newID = %q (host %q), parsed %+v, %v", id, host, s, ok)
	}
}

// A gVisor sandbox's programs meet their pids limit inside gVisor (the
// pids.max of their cgroup there, which the annotation sets), while its host
// cgroup, which holds gVisor's kernel, bounds that kernel's threads and
// memory with room above the programs' own; clone3 is allowed, since gVisor
// answers errno rules with EPERM and glibc would make no thread. A
// container's keeps Docker's rules as they are.
func TestAGVisorSpecLimitsTasksInsideGVisor(t *testing.T) {
	res := sandbox.Resources{MemoryMB: 256, CPUs: 1, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8}
	clone3 := func(s *specs.Spec) specs.LinuxSeccompAction {
		for _, r := range s.Linux.Seccomp.Syscalls {
			if slices.Contains(r.Names, "clone3") {
				return r.Action
			}
		}
		return s.Linux.Seccomp.DefaultAction
	}
	for _, tc := range []struct {
		name       string
		gvisor     bool
		hostPids   int64
		hostMemory int64
		pidsInside string // the annotation's pids.max inside gVisor
		clone3Rule specs.LinuxSeccompAction
	}{
		{"container", false, 64, 256 << 20, "", specs.ActErrno},
		{"gvisor", true, 4*64 + 256, (256 + 64) << 20, "64", specs.ActAllow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec, err := Spec(sandbox.Template{Image: "img", Resources: res, MaxLife: time.Minute},
				sandboxSpec{ID: "mcr-1-2-3-abc", Hostname: "abc", Rootfs: "/r", Agent: "/a", Hosts: "/h", HostnameFile: "/b/hostname", GVisor: tc.gvisor})
			if err != nil {
				t.Fatal(err)
			}
			if got := spec.Linux.Resources.Pids.Limit; got != tc.hostPids {
				t.Errorf("host pids limit %d, want %d", got, tc.hostPids)
			}
			if got := *spec.Linux.Resources.Memory.Limit; got != tc.hostMemory {
				t.Errorf("host memory limit %d, want %d", got, tc.hostMemory)
			}
			if got := spec.Annotations[sandbox.GVisorPidsMaxAnnotation]; got != tc.pidsInside {
				t.Errorf("pids.max inside gVisor %q, want %q", got, tc.pidsInside)
			}
			for _, r := range spec.Process.Rlimits {
				if r.Type == "RLIMIT_NPROC" {
					t.Errorf("RLIMIT_NPROC %d: the pids limit is the cgroup's, not a user's", r.Hard)
				}
			}
			if got := clone3(spec); got != tc.clone3Rule {
				t.Errorf("clone3's seccomp action %s, want %s", got, tc.clone3Rule)
			}
		})
	}
}

// TestACheckpointableSpecBindsTheBackendsMasks: a checkpointable sandbox's
// masked directories, its /dev and (cgroup v1) its /sys/fs/cgroup are the
// backend's read-only tmpfs mounts, bound read-only (masks.go), not tmpfs
// mounts of its own that CRIU would archive; its masked files stay crun's,
// and what is mounted on /dev is mounted after it.
func TestACheckpointableSpecBindsTheBackendsMasks(t *testing.T) {
	m := &masks{emptyDir: "/m/empty", dirs: []string{"/proc/acpi", "/sys/firmware"}, cgroupDir: "/m/cgroup", devDir: "/m/dev"}
	spec, err := Spec(sandbox.Template{Image: "img", MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 256, CPUs: 1, PidsLimit: 64, WorkspaceMB: 32, TmpMB: 16, NoFile: 512, FileSizeMB: 8}},
		sandboxSpec{ID: "mcr-1-2-3-abc", Hostname: "abc", Rootfs: "/r", Agent: "/a", Hosts: "/h", HostnameFile: "/b/hostname",
			UserNamespace: true, CgroupControllers: []string{"cpu", "memory"}, Masks: m})
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range m.dirs {
		if slices.Contains(spec.Linux.MaskedPaths, d) {
			t.Errorf("%s is still masked by crun (a tmpfs of the sandbox's own)", d)
		}
		if b := mountAt(spec, d); b == nil || b.Type != "bind" || b.Source != m.emptyDir || !hasOptions(b, "ro", "nosuid", "nodev", "noexec") {
			t.Errorf("%s is %+v, want the backend's empty tmpfs bound read-only", d, b)
		}
	}
	if !slices.Contains(spec.Linux.MaskedPaths, "/proc/kcore") {
		t.Error("the masked files are no longer masked")
	}
	if c := mountAt(spec, "/sys/fs/cgroup"); c == nil || c.Type != "bind" || c.Source != m.cgroupDir || !hasOptions(c, "ro") {
		t.Errorf("/sys/fs/cgroup is %+v, want the backend's controllers' tmpfs bound read-only", c)
	}
	for _, c := range []string{"cpu", "memory"} {
		if b := mountAt(spec, "/sys/fs/cgroup/"+c); b == nil || b.Source != "/sys/fs/cgroup/"+c+"/mcp-code-runner/mcr-1-2-3-abc" || !hasOptions(b, "ro") {
			t.Errorf("/sys/fs/cgroup/%s is %+v, want the sandbox's own cgroup bound read-only", c, b)
		}
	}
	var tmpfs []string
	for _, mt := range spec.Mounts {
		if mt.Type == "tmpfs" {
			tmpfs = append(tmpfs, mt.Destination)
		}
	}
	if want := []string{"/dev/shm", "/tmp", wire.WorkspacePath}; !slices.Equal(tmpfs, want) {
		t.Errorf("the sandbox's own tmpfs mounts are %v, want %v", tmpfs, want)
	}
	if d := mountAt(spec, "/dev"); d == nil || d.Type != "bind" || d.Source != m.devDir || !hasOptions(d, "ro", "nosuid", "nodev", "noexec") {
		t.Errorf("/dev is %+v, want the backend's /dev tree bound read-only", d)
	}
	dev := slices.IndexFunc(spec.Mounts, func(mt specs.Mount) bool { return mt.Destination == "/dev" })
	for i, mt := range spec.Mounts {
		if strings.HasPrefix(mt.Destination, "/dev/") && i < dev {
			t.Errorf("%s is mounted before /dev, which would cover it", mt.Destination)
		}
	}
}
