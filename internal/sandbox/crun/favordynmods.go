//go:build linux

package crun

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// Cgroups that favor changes (cgroup v2's favordynmods), turned on once
// per host by the backend.
//
// Every sandbox's first process is moved into the sandbox's cgroup (crun
// writes it to cgroup.procs at each create and each restore). A move
// takes the cgroups' thread group lock for writing, and in its default
// mode that lock makes the first writer after a quiet moment wait a
// whole RCU grace period: 6-22 ms here (HZ=250), 12.5 ms of one
// `crun restore` in strace, and again when crun's helper process in the
// sandbox's cgroup exits. favordynmods keeps the lock ready for writers,
// at the cost of a little more work at each fork and exit; since Linux
// 6.18 it takes a lock of the moved thread group's own, and the kernel
// keeps that mode until the next boot. It is an option of the cgroup v2
// hierarchy (mounted at /sys/fs/cgroup/unified on a hybrid host, at
// /sys/fs/cgroup on a v2 one) and applies to the v1 hierarchies too. The
// backend remounts that hierarchy with the option added to the options it
// has: remounting cgroup v2 sets all of its options, so one left out (a
// systemd host's nsdelegate) would be turned off.

// cgroup2Mount is the host's mount of the whole cgroup v2 hierarchy: its
// mount point, the mount's own flags (MS_NOSUID and the like) and the
// hierarchy's options (nsdelegate, favordynmods, ...).
type cgroup2Mount struct {
	point   string
	flags   uintptr
	options []string
}

// mountFlagsByName are the per-mount options of mountinfo that a remount
// must pass again to keep them.
var mountFlagsByName = map[string]uintptr{
	"ro": unix.MS_RDONLY, "nosuid": unix.MS_NOSUID, "nodev": unix.MS_NODEV, "noexec": unix.MS_NOEXEC,
	"noatime": unix.MS_NOATIME, "nodiratime": unix.MS_NODIRATIME, "relatime": unix.MS_RELATIME,
	"strictatime": unix.MS_STRICTATIME,
}

// findCgroup2Mount is the first mount of the whole cgroup v2 hierarchy in
// mountinfo (/proc/self/mountinfo's content).
func findCgroup2Mount(mountinfo []byte) (cgroup2Mount, bool) {
	mounts := wholeCgroupMounts(mountinfo)
	i := slices.IndexFunc(mounts, func(m cgroupMount) bool { return m.fstype == "cgroup2" })
	if i < 0 {
		return cgroup2Mount{}, false
	}
	m := cgroup2Mount{point: mounts[i].point}
	for _, o := range mounts[i].mountOptions {
		m.flags |= mountFlagsByName[o]
	}
	for _, o := range mounts[i].superOptions {
		if o != "rw" && o != "ro" {
			m.options = append(m.options, o)
		}
	}
	return m, true
}

// remountData is what a remount of m passes to turn favordynmods on and
// keep the hierarchy's other options, and whether one is needed at all.
func (m cgroup2Mount) remountData() (string, bool) {
	if slices.Contains(m.options, "favordynmods") {
		return "", false
	}
	return strings.Join(append(slices.Clone(m.options), "favordynmods"), ","), true
}

// errNoCgroup2 says the host has no cgroup v2 hierarchy mounted whole.
var errNoCgroup2 = errors.New("the host has no cgroup v2 hierarchy mounted (a cgroup v1 only host): its v1 hierarchies cannot take the option after their mount")

// favorCgroupChanges turns favordynmods on for this host's cgroups, unless
// they have it, and says whether it did.
func favorCgroupChanges() (bool, error) {
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return false, err
	}
	m, ok := findCgroup2Mount(mountinfo)
	if !ok {
		return false, errNoCgroup2
	}
	data, needed := m.remountData()
	if !needed {
		return false, nil
	}
	if err := unix.Mount("", m.point, "", unix.MS_REMOUNT|m.flags, data); err != nil {
		return false, fmt.Errorf("remounting %s with %s: %w", m.point, data, err)
	}
	if mountinfo, err = os.ReadFile("/proc/self/mountinfo"); err != nil {
		return false, err
	}
	if after, ok := findCgroup2Mount(mountinfo); !ok || !slices.Contains(after.options, "favordynmods") {
		return false, fmt.Errorf("the kernel did not take favordynmods on %s (it may predate Linux 6.0)", m.point)
	}
	return true, nil
}
