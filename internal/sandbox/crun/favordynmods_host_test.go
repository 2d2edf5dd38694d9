//go:build linux && !fast

package crun

import (
	"log/slog"
	"os"
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// hostCgroup2 is this host's cgroup v2 mount, as mountinfo says now.
func hostCgroup2(t *testing.T) cgroup2Mount {
	t.Helper()
	mountinfo, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	m, ok := findCgroup2Mount(mountinfo)
	if !ok {
		t.Fatal(errNoCgroup2)
	}
	return m
}

// TestTheBackendHasTheHostsCgroupsFavorChanges takes favordynmods off the
// host's cgroup v2 hierarchy (since Linux 6.18 the kernel keeps the lock's
// mode, and the option's name goes), then has a backend prepare itself.
// Only the option's coming back is asserted: servers of tests running
// beside this one may add it at any moment, never take it away.
func TestTheBackendHasTheHostsCgroupsFavorChanges(t *testing.T) {
	if os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("this test remounts the host's cgroup v2 hierarchy, which needs root: required under CI=true")
		}
		t.Skip("needs root")
	}
	before := hostCgroup2(t)
	without := slices.DeleteFunc(slices.Clone(before.options), func(o string) bool { return o == "favordynmods" })
	t.Cleanup(func() {
		// The host's options as they were (the servers of other tests
		// may have turned favordynmods on).
		if err := unix.Mount("", before.point, "", unix.MS_REMOUNT|before.flags, strings.Join(before.options, ",")); err != nil {
			t.Errorf("putting the host's cgroup v2 options back (%q): %v", before.options, err)
		}
	})
	if err := unix.Mount("", before.point, "", unix.MS_REMOUNT|before.flags, strings.Join(without, ",")); err != nil {
		t.Fatalf("remounting %s without favordynmods: %v", before.point, err)
	}
	b := &Backend{opts: Options{StateDir: t.TempDir(), FavorCgroupChanges: true}, log: slog.New(slog.DiscardHandler)}
	if _, err := b.prepared(); err != nil {
		t.Fatal(err)
	}
	after := hostCgroup2(t)
	if !slices.Contains(after.options, "favordynmods") {
		t.Errorf("after the backend's preparation the host's cgroup v2 options are %q", after.options)
	}
	rest := slices.DeleteFunc(slices.Clone(after.options), func(o string) bool { return o == "favordynmods" })
	if !slices.Equal(rest, without) || after.flags != before.flags || after.point != before.point {
		t.Errorf("the remount changed the host's other options: %s %#x %q, before %s %#x %q",
			after.point, after.flags, after.options, before.point, before.flags, before.options)
	}
}
