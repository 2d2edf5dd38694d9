//go:build linux

package crun

import (
	"testing"

	"golang.org/x/sys/unix"
)

func TestTheHostsCgroupsAreRemountedToFavorChangesKeepingTheirOtherOptions(t *testing.T) {
	tests := []struct {
		name, mountinfo     string
		wantFound           bool
		wantPoint, wantData string
		wantFlags           uintptr
		wantNeeded          bool
	}{{
		name: "a hybrid host: the v2 hierarchy beside the v1 ones, no options of its own",
		mountinfo: "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n" +
			"32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n" +
			"45 31 0:42 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
		wantFound: true, wantPoint: "/sys/fs/cgroup/unified", wantFlags: unix.MS_RELATIME,
		wantData: "favordynmods", wantNeeded: true,
	}, {
		name:      "a systemd host keeps nsdelegate, memory_recursiveprot and its mount's flags",
		mountinfo: "30 1 0:27 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
		wantFound: true, wantPoint: "/sys/fs/cgroup", wantFlags: unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_RELATIME,
		wantData: "nsdelegate,memory_recursiveprot,favordynmods", wantNeeded: true,
	}, {
		name:      "a hierarchy that favors changes already is left alone",
		mountinfo: "30 1 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,favordynmods\n",
		wantFound: true, wantPoint: "/sys/fs/cgroup", wantFlags: unix.MS_NOSUID,
	}, {
		name:      "a read-only mount stays read-only, and an escaped mount point is read as the path it is",
		mountinfo: "30 1 0:27 / /run/my\\040cgroups ro,noatime - cgroup2 cgroup2 ro\n",
		wantFound: true, wantPoint: "/run/my cgroups", wantFlags: unix.MS_RDONLY | unix.MS_NOATIME,
		wantData: "favordynmods", wantNeeded: true,
	}, {
		name:      "a mount of part of the hierarchy (a container's view) is not the hierarchy's",
		mountinfo: "30 1 0:27 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n",
	}, {
		name:      "a cgroup v1 only host has none",
		mountinfo: "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, found := findCgroup2Mount([]byte(tt.mountinfo))
			if found != tt.wantFound {
				t.Fatalf("found %v, want %v", found, tt.wantFound)
			}
			if !found {
				return
			}
			if m.point != tt.wantPoint || m.flags != tt.wantFlags {
				t.Errorf("mount at %q with flags %#x, want %q with %#x", m.point, m.flags, tt.wantPoint, tt.wantFlags)
			}
			data, needed := m.remountData()
			if data != tt.wantData || needed != tt.wantNeeded {
				t.Errorf("remount with %q (needed %v), want %q (needed %v)", data, needed, tt.wantData, tt.wantNeeded)
			}
		})
	}
}
