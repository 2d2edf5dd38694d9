package sandbox

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Owner identifies a server process on the sandboxes it makes (container
// labels, pod annotations, sandbox names), so that a later server can tell
// whether the one that made a sandbox still runs and remove what it left.
type Owner struct {
	// ID is host/pid/start: one process for the life of the boot.
	ID string
	// Host is the host name, followed by the PID namespace when it is not
	// the host's: PIDs name processes only within their namespace.
	Host string
	// PID is the process's, in its PID namespace.
	PID int
	// Start is the process's start in clock ticks since boot (ProcessStart).
	Start string
}

// CurrentOwner identifies this server process.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	// A server in a container on the host's network has the host's name
	// but other PIDs, and must not take the host's servers for dead (nor
	// they it).
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil && !isInitialPIDNamespace(ns) {
		host += "+" + strings.NewReplacer("pid:[", "pidns", "]", "").Replace(ns)
	}
	pid := os.Getpid()
	start := ProcessStart(pid)
	return Owner{ID: fmt.Sprintf("%s/%d/%s", host, pid, start), Host: host, PID: pid, Start: start}
}

// initialPIDNamespace is the inode of the host's PID namespace, fixed by
// the kernel (PROC_PID_INIT_INO).
const initialPIDNamespace = "pid:[4026531836]"

// isInitialPIDNamespace reports whether ns (a /proc/self/ns/pid link) is
// the host's: servers there keep the plain host name.
func isInitialPIDNamespace(ns string) bool { return ns == initialPIDNamespace }

// RecordedOwner reads back an owner recorded as text; a PID that is not a
// number reads as 0, an owner that cannot be alive.
func RecordedOwner(id, host, pid, start string) Owner {
	n, err := strconv.Atoi(pid)
	if err != nil {
		n = 0
	}
	return Owner{ID: id, Host: host, PID: n, Start: start}
}

// HostTag is a short digest of Host, safe in names that have no room for
// the host name itself (sandbox and directory names).
func (o Owner) HostTag() string {
	sum := sha256.Sum256([]byte(o.Host))
	return hex.EncodeToString(sum[:4])
}

// Alive reports whether the server maker, recorded on a sandbox, still
// runs, as o (this server) can tell: o itself does; a server of another
// host (or PID namespace) cannot be checked, so it counts as alive and the
// sandbox's expiry decides; one of this host runs when its PID still
// names a process that started when it did.
func (o Owner) Alive(maker Owner) bool {
	if maker.ID != "" && maker.ID == o.ID {
		return true
	}
	if maker.Host != o.Host {
		return true
	}
	if maker.PID <= 0 {
		return false
	}
	start := ProcessStart(maker.PID)
	return start != "" && start == maker.Start
}

// NameFields is o as part of a name: "<pid>-<start>-<host tag>", for
// sandboxes and directories whose name is all that records their owner.
func (o Owner) NameFields() string { return fmt.Sprintf("%d-%s-%s", o.PID, o.Start, o.HostTag()) }

// AliveNamed is Alive for an owner read back from a name's fields
// (NameFields). A name without a host tag, made before names carried one,
// counts as this host's.
func (o Owner) AliveNamed(pid, start, hostTag string) bool {
	self := Owner{ID: o.ID, Host: o.HostTag(), PID: o.PID, Start: o.Start}
	if hostTag == "" {
		hostTag = self.Host
	}
	return self.Alive(RecordedOwner("", hostTag, pid, start))
}
