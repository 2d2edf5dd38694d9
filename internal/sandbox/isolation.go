package sandbox

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Isolation is what stands between a sandbox's programs and the host's
// kernel.
type Isolation string

const (
	// IsolationContainer is a hardened container: its own namespaces and
	// cgroup, no capability, Docker's seccomp profile, on the host's
	// kernel. The zero value of a template means it.
	IsolationContainer Isolation = "container"
	// IsolationGVisor is a hardened container whose programs run on
	// gVisor's kernel (runsc), a second wall: their system calls reach
	// gVisor's Sentry, in user space, and only its own narrow set of calls
	// reaches the host's kernel.
	IsolationGVisor Isolation = "gvisor"
)

// Isolations are the isolations, weakest first.
var Isolations = []Isolation{IsolationContainer, IsolationGVisor}

// ParseIsolation returns the isolation named s; "" is IsolationContainer.
func ParseIsolation(s string) (Isolation, error) {
	switch Isolation(strings.ToLower(strings.TrimSpace(s))) {
	case "", IsolationContainer:
		return IsolationContainer, nil
	case IsolationGVisor:
		return IsolationGVisor, nil
	}
	return "", fmt.Errorf("isolation %q: want container or gvisor", s)
}

// Or is i, or IsolationContainer when i is unset.
func (i Isolation) Or() Isolation {
	if i == "" {
		return IsolationContainer
	}
	return i
}

// Stronger returns the stronger of i and o: a request may only tighten
// what the operator set.
func (i Isolation) Stronger(o Isolation) Isolation {
	if i.Or() == IsolationGVisor || o.Or() == IsolationGVisor {
		return IsolationGVisor
	}
	return IsolationContainer
}

// IsolationSupporter is a Backend that says whether it can make sandboxes
// of an isolation here (a backend that is not one makes containers only).
type IsolationSupporter interface {
	// IsolationSupport returns nil when sandboxes of i can be made here,
	// else why not and what to do (wrapping ErrUnsupported).
	IsolationSupport(i Isolation) error
}

// IsolationSupport asks b whether it can make sandboxes of i.
func IsolationSupport(b Backend, i Isolation) error {
	if s, ok := b.(IsolationSupporter); ok {
		return s.IsolationSupport(i)
	}
	if i.Or() == IsolationContainer {
		return nil
	}
	return fmt.Errorf("%w: isolation %s: this backend makes containers only", ErrUnsupported, i)
}

// HostPids is the pids limit of the host cgroup of a sandbox of isolation
// i whose programs may have r.PidsLimit tasks. A container's is that limit.
// A gVisor sandbox's host cgroup holds gVisor's kernel instead, whose host
// threads and stub processes grow with the program's tasks but are not
// them: its limit bounds them on the host, with room above the program's
// own, which gVisor enforces inside (GVisorPidsMaxAnnotation).
func HostPids(i Isolation, r Resources) int {
	if i.Or() != IsolationGVisor {
		return r.PidsLimit
	}
	return 4*r.PidsLimit + 256
}

// GVisorPidsMaxAnnotation, on a gVisor sandbox's OCI configuration, is the
// pids.max of the container's own pids cgroup inside gVisor (a patch of the
// project's gVisor build, scripts/gvisor/): gVisor refuses a fork or clone
// past it with EAGAIN and counts the refusals in pids.events, as Linux's
// pids controller does for a container's cgroup, and the sandbox's
// programs read both in their /sys/fs/cgroup/pids.
const GVisorPidsMaxAnnotation = "dev.gvisor.spec.cgroup.pids.max"

// GVisorPidsMax is that limit: the sandbox's pids limit, which counts every
// task of the sandbox (the agent's threads too), as a container's cgroup
// does.
func GVisorPidsMax(r Resources) string { return strconv.Itoa(r.PidsLimit) }

// gvisorMemoryMB is the memory a gVisor sandbox's host cgroup holds beside
// its programs': gVisor's kernel, its page tables and its gofer (about
// 15 MiB idle, measured by make bench, and more while its programs make
// many processes or files).
const gvisorMemoryMB = 64

// HostMemoryMB is the memory limit of the host cgroup of a sandbox of
// isolation i whose programs may use r.MemoryMB: a gVisor sandbox's holds
// gVisor's kernel too, so that the programs keep the budget a container
// gives them.
func HostMemoryMB(i Isolation, r Resources) int {
	if i.Or() != IsolationGVisor {
		return r.MemoryMB
	}
	return r.MemoryMB + gvisorMemoryMB
}

// CgroupOOMKills reads the OOM kills a cgroup counted from its memory file
// (the "oom_kill N" line of cgroup v1's memory.oom_control or v2's
// memory.events); ok is false when the file cannot be read or has none.
// A gVisor sandbox's agent cannot read them (its cgroup files are
// gVisor's), so its backend counts them in the host's cgroup.
func CgroupOOMKills(path string) (kills int, ok bool) {
	data, err := os.ReadFile(path) // a cgroup file of one of our sandboxes
	if err != nil {
		return 0, false
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if n, found := strings.CutPrefix(line, "oom_kill "); found {
			v, err := strconv.Atoi(strings.TrimSpace(n))
			return v, err == nil
		}
	}
	return 0, false
}

// CgroupMemoryUsage reads the memory a cgroup's tasks use now from one of
// paths (cgroup v1's memory.usage_in_bytes, v2's memory.current), the
// first that can be read; ok is false when none can.
func CgroupMemoryUsage(paths ...string) (bytes uint64, ok bool) {
	for _, p := range paths {
		data, err := os.ReadFile(p) // a cgroup file of one of our sandboxes
		if err != nil {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 64)
		return v, err == nil
	}
	return 0, false
}
