//go:build linux

package crun

import (
	"reflect"
	"strings"
	"testing"
)

func TestTheCgroupYardNamesEachHierarchyAsCRIUDoesAndFindsItsWholeMount(t *testing.T) {
	const v1Mounts = `25 30 0:22 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
26 25 0:23 / /sys/fs/cgroup/cpu,cpuacct rw,relatime shared:9 - cgroup cgroup rw,cpu,cpuacct
27 25 0:24 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
28 25 0:25 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,xattr,name=systemd
29 25 0:26 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw,nsdelegate
40 30 0:40 / /run/my\040cgroups rw,relatime - cgroup cgroup rw,pids
`
	tests := []struct {
		name, cgroups, mountinfo string
		want                     []cgroupHierarchy
		wantErr                  string
	}{{
		name:      "cgroup v1 with a combined hierarchy, a named one and the v2 one beside them",
		cgroups:   "4:pids:/\n3:cpu,cpuacct:/user.slice\n2:memory:/x\n1:name=systemd:/init.scope\n0::/init.scope\n",
		mountinfo: v1Mounts,
		want: []cgroupHierarchy{
			{name: "pids", mountpoint: "/run/my cgroups"},
			{name: "cpu,cpuacct", mountpoint: "/sys/fs/cgroup/cpu,cpuacct"},
			{name: "memory", mountpoint: "/sys/fs/cgroup/memory"},
			{name: "systemd", mountpoint: "/sys/fs/cgroup/systemd"},
			{name: "unified", mountpoint: "/sys/fs/cgroup/unified"},
		},
	}, {
		name:      "cgroup v2 alone",
		cgroups:   "0::/user.slice/session-1.scope\n",
		mountinfo: "30 1 0:27 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n",
		want:      []cgroupHierarchy{{name: "unified", mountpoint: "/sys/fs/cgroup"}},
	}, {
		name:      "a hierarchy the host has mounted only below its root (a container's view) is refused",
		cgroups:   "1:memory:/\n",
		mountinfo: "27 25 0:24 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n",
		wantErr:   `"memory" is not mounted whole`,
	}, {
		name:      "a hierarchy not mounted at all is refused",
		cgroups:   "5:hugetlb:/\n",
		mountinfo: v1Mounts,
		wantErr:   `"hugetlb" is not mounted whole`,
	}, {
		name:      "a controller is not matched by a prefix of another's name",
		cgroups:   "2:cpu:/\n",
		mountinfo: "27 25 0:24 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n",
		wantErr:   `"cpu" is not mounted whole`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupHierarchies([]byte(tt.cgroups), []byte(tt.mountinfo))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q (got %v)", err, tt.wantErr, got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("hierarchies\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}
