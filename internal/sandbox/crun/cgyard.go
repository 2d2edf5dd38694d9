//go:build linux

package crun

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/sys/unix"
)

// CRIU's cgroup yard, made once by the backend.
//
// At every dump and every restore CRIU mounts each of the host's cgroup
// hierarchies anew, in a "yard" of its own, to read and write the
// sandbox's cgroups through it. A new mount of the cgroup v2 hierarchy
// costs a whole RCU grace period (the kernel takes the cgroups' thread
// group lock for writing as it applies the mount's options): 9-13 ms of
// a 50 ms restore log here, and as much of a dump, on an idle host. CRIU
// takes a yard made ahead instead (its cgroup-yard option: a directory
// holding, per hierarchy, a directory where it is mounted, named as CRIU
// names it). The backend makes one under cgroupYardBase of bind mounts of
// the host's own cgroup mounts, which cost no new mount of a hierarchy,
// and names it in CRIU's configuration files. Like the masks it is shared
// by every server on the host and never unmounted.

// cgroupYardBase is the yard's directory.
const cgroupYardBase = "/run/mcr-crun-cgyard"

// cgroupHierarchy is one of the host's cgroup hierarchies: the name CRIU
// gives its directory in a yard, and where the host has it mounted.
type cgroupHierarchy struct {
	name, mountpoint string
}

// makeCgroupYard makes the yard under dir, unless a server already did,
// and returns dir; it says why not when a hierarchy of this process is not
// mounted whole on the host, and CRIU then mounts its own.
func makeCgroupYard(dir string) (string, error) {
	cgroups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return "", err
	}
	hierarchies, err := cgroupHierarchies(cgroups, mountinfo)
	if err != nil {
		return "", err
	}
	if yardComplete(dir, hierarchies) {
		return dir, nil // another server's, or this one's before a restart
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	if !isTmpfs(dir) {
		if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "mode=0700,size=64k"); err != nil {
			return "", fmt.Errorf("mounting a tmpfs at %s: %w", dir, err)
		}
	}
	for _, h := range hierarchies {
		target := filepath.Join(dir, h.name)
		if isCgroupFS(target) {
			continue
		}
		if err := os.Mkdir(target, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return "", err
		}
		if err := unix.Mount(h.mountpoint, target, "", unix.MS_BIND, ""); err != nil {
			return "", fmt.Errorf("binding %s at %s: %w", h.mountpoint, target, err)
		}
	}
	if !yardComplete(dir, hierarchies) {
		return "", fmt.Errorf("%s does not hold every cgroup hierarchy after binding them", dir)
	}
	return dir, nil
}

// yardComplete says whether dir holds a cgroup mount for each hierarchy.
func yardComplete(dir string, hierarchies []cgroupHierarchy) bool {
	if !isTmpfs(dir) {
		return false
	}
	for _, h := range hierarchies {
		if !isCgroupFS(filepath.Join(dir, h.name)) {
			return false
		}
	}
	return true
}

// isCgroupFS says whether dir is the root of a cgroup mount, v1 or v2.
func isCgroupFS(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && (st.Type == unix.CGROUP_SUPER_MAGIC || st.Type == unix.CGROUP2_SUPER_MAGIC)
}

// cgroupHierarchies lists the hierarchies of /proc/self/cgroup (cgroups)
// with the directory name CRIU gives each in a yard (its controllers
// joined by commas, "name=" left out, "unified" for cgroup v2) and the
// host's mount of the whole of it, from /proc/self/mountinfo.
func cgroupHierarchies(cgroups, mountinfo []byte) ([]cgroupHierarchy, error) {
	mounts := wholeCgroupMounts(mountinfo)
	var out []cgroupHierarchy
	sc := bufio.NewScanner(bytes.NewReader(cgroups))
	for sc.Scan() {
		// ID:CONTROLLERS:PATH
		fields := strings.SplitN(sc.Text(), ":", 3)
		if len(fields) != 3 {
			continue
		}
		h := cgroupHierarchy{name: "unified"}
		var controllers []string
		if fields[1] != "" {
			controllers = strings.Split(fields[1], ",")
			names := make([]string, len(controllers))
			for i, c := range controllers {
				names[i] = strings.TrimPrefix(c, "name=")
			}
			h.name = strings.Join(names, ",")
		}
		i := slices.IndexFunc(mounts, func(m cgroupMount) bool {
			if fields[1] == "" {
				return m.fstype == "cgroup2"
			}
			return m.fstype == "cgroup" && !slices.ContainsFunc(controllers, func(c string) bool { return !slices.Contains(m.superOptions, c) })
		})
		if i < 0 {
			return nil, fmt.Errorf("the cgroup hierarchy %q is not mounted whole on this host", fields[1])
		}
		h.mountpoint = mounts[i].point
		out = append(out, h)
	}
	if len(out) == 0 {
		return nil, errors.New("this process is in no cgroup hierarchy")
	}
	return out, nil
}

// cgroupMount is a mount of the whole of a cgroup hierarchy, from
// mountinfo: where, its file system type (cgroup or cgroup2), the mount's
// own options (nosuid, relatime, ...) and the hierarchy's (its
// controllers, nsdelegate, ...).
type cgroupMount struct {
	point, fstype              string
	mountOptions, superOptions []string
}

// wholeCgroupMounts lists the mounts of whole cgroup hierarchies in
// mountinfo (/proc/self/mountinfo's content), in its order.
func wholeCgroupMounts(mountinfo []byte) []cgroupMount {
	var mounts []cgroupMount
	sc := bufio.NewScanner(bytes.NewReader(mountinfo))
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTIONS
		before, after, ok := strings.Cut(sc.Text(), " - ")
		fields, tail := strings.Fields(before), strings.Fields(after)
		if !ok || len(fields) < 6 || len(tail) < 3 || (tail[0] != "cgroup" && tail[0] != "cgroup2") || fields[3] != "/" {
			continue
		}
		mounts = append(mounts, cgroupMount{point: unescapeMountinfo(fields[4]), fstype: tail[0],
			mountOptions: strings.Split(fields[5], ","), superOptions: strings.Split(tail[2], ",")})
	}
	return mounts
}

// unescapeMountinfo undoes mountinfo's octal escapes (\040 for a space).
func unescapeMountinfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v byte
			valid := true
			for _, c := range []byte(s[i+1 : i+4]) {
				if c < '0' || c > '7' {
					valid = false
					break
				}
				v = v*8 + c - '0'
			}
			if valid {
				b.WriteByte(v)
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
