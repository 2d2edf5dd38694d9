//go:build linux

package crun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"

	"golang.org/x/sys/unix"
)

// The sandbox's network namespace at a checkpoint and a restore.
//
// A checkpointable sandbox's network namespace holds loopback alone, up,
// with its addresses and routes as the kernel makes them when it comes up,
// no rule and no firewall table, and nothing in the sandbox can change it:
// no process there has a capability in the user namespace that owns it
// (or any other), and Docker's seccomp profile refuses new namespaces.
// Left to itself, CRIU still saves that namespace with `ip addr save`,
// `ip route save` (twice), `ip rule save`, `iptables-legacy-save` and
// `ip6tables-legacy-save`, locks and unlocks it with iptables around the
// dump, and at a restore runs the same tools again to put it back: a
// dozen processes on each side, tens of milliseconds, hundreds on a
// loaded host. So the backend gives CRIU, through a configuration file
// (CRIU_CONFIG_FILE; crun 1.21 passes neither option), `empty-ns net`
// (the dump saves no network state, the restore makes a new, empty
// network namespace for the sandbox, owned by its restored user
// namespace as crun's was) and `network-lock skip` (nothing outside the
// frozen sandbox can send it a packet). The new namespace's loopback is
// down until it is brought up, one of two ways. A sandbox that held an
// internet socket at its dump (any line in its namespace's /proc/net
// tables while it is frozen) needs loopback before CRIU restores its
// sockets: an action script brings it up when CRIU has made the
// sandbox's namespaces. But CRIU runs its action scripts at each of its
// seven restore steps, a process each, which on a loaded host costs as
// much as the tools it replaces; so a sandbox that held none (an idle
// session's, almost always) is restored without the script, and the
// backend brings its loopback up itself, in-process, the moment crun's
// restore returns and before the agent is served (loopbackUp). Either
// way the sandbox comes back to the namespace it had, loopback alone and
// up; in the second, a thread of its own that opened a new socket to
// loopback in the fraction of a millisecond between CRIU's end and the
// backend's call would find it down. (crun also gives CRIU a namespace that the configuration
// names by path as external, so that a restore joins one made ahead; but
// CRIU dumps a sandbox in a user namespace of its own only when every
// other namespace of it belongs to that user namespace, and a restored
// sandbox's user namespace is new: it could not join one made ahead.)

// criuNetDir, under the backend's state directory, holds CRIU's
// configuration files and the action script.
const criuNetDir = "criu"

// Files in criuNetDir.
const (
	criuDumpConf    = "dump.conf"
	criuRestoreConf = "restore.conf"
	// criuRestoreLaterConf restores a sandbox that held no internet
	// socket: no action script, its loopback brought up after CRIU.
	criuRestoreLaterConf = "restore-later.conf"
	criuLoopbackUp       = "loopback-up"
)

// prepareCRIUNet writes CRIU's configuration files and the action script
// under dir, each file with the lines of extra too, and returns the
// configuration file of each crun operation ("checkpoint", "restore"); it
// says why not when the host lacks what the script runs or dir cannot
// hold an executable, and CRIU then saves and restores the namespace as
// it does by default.
func prepareCRIUNet(dir, extra string) (map[string]string, error) {
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return nil, fmt.Errorf("nsenter (util-linux), which brings a restored sandbox's loopback up: %w", err)
	}
	ip, err := exec.LookPath("ip")
	if err != nil {
		return nil, fmt.Errorf("ip (iproute2), which brings a restored sandbox's loopback up: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return nil, err
	}
	if st.Flags&unix.ST_NOEXEC != 0 {
		return nil, fmt.Errorf("%s is on a file system mounted noexec: CRIU could not run the script that brings a restored sandbox's loopback up", dir)
	}
	// CRIU runs the script at every step of a restore; it acts at one:
	// the sandbox's namespaces are made, nothing in them is restored yet.
	script := "#!/bin/sh\n" +
		"[ \"$CRTOOLS_SCRIPT_ACTION\" = setup-namespaces ] || exit 0\n" +
		fmt.Sprintf("exec %s --net=/proc/\"$CRTOOLS_INIT_PID\"/ns/net %s link set lo up\n", shellQuote(nsenter), shellQuote(ip))
	common := "empty-ns net\nnetwork-lock skip\n" + extra
	loUp := filepath.Join(dir, criuLoopbackUp)
	files := map[string]string{
		criuLoopbackUp:       script,
		criuDumpConf:         common,
		criuRestoreConf:      common + "action-script " + loUp + "\n",
		criuRestoreLaterConf: common,
	}
	for name, content := range files {
		if err := writeFileAtomic(filepath.Join(dir, name), []byte(content), 0o700); err != nil {
			return nil, err
		}
	}
	return map[string]string{"checkpoint": filepath.Join(dir, criuDumpConf), "restore": filepath.Join(dir, criuRestoreConf),
		restoreLoopbackLater: filepath.Join(dir, criuRestoreLaterConf)}, nil
}

// restoreLoopbackLater is the key, in checkpointTools.netConf, of the
// configuration of a restore whose loopback the backend brings up.
const restoreLoopbackLater = "restore, loopback later"

// inetTables are the /proc/net tables of a network namespace that list
// its internet sockets, one line each below a header.
var inetTables = []string{"tcp", "tcp6", "udp", "udp6", "udplite", "udplite6", "raw", "raw6", "icmp", "icmp6"}

// holdsInetSockets says whether the network namespace of process pid
// holds an internet socket, or may (a table it cannot read).
func holdsInetSockets(pid int) bool {
	for _, t := range inetTables {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/%s", pid, t)) // the sandbox's kernel tables
		if errors.Is(err, os.ErrNotExist) {
			continue // a protocol this kernel lacks
		}
		if err != nil || strings.Count(strings.TrimRight(string(data), "\n"), "\n") > 0 {
			return true
		}
	}
	return false
}

// loopbackUp brings up the loopback interface of process pid's network
// namespace, from a thread of this process that enters it.
func loopbackUp(pid int) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		// A thread that cannot go back to the server's namespace stays
		// locked, and Go ends it with this goroutine.
		own, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			done <- err
			return
		}
		defer own.Close()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			done <- err
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- fmt.Errorf("entering the sandbox's network namespace: %w", err)
			return
		}
		err = setUp("lo")
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		done <- err
	}()
	return <-done
}

// setUp brings interface name of the calling thread's network namespace
// up.
func setUp(name string) error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq(name)
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("reading %s's flags: %w", name, err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bringing %s up: %w", name, err)
	}
	return nil
}

// writeFileAtomic writes path whole (mode perm) through a temporary file
// beside it: another server on the host may be reading it.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	tmp := fmt.Sprintf("%s.tmp%d", path, os.Getpid())
	if err := os.WriteFile(tmp, data, perm); err != nil { // the backend's own state directory
		return err
	}
	if err := os.Chmod(tmp, perm); err != nil { // past the umask
		return errors.Join(err, os.Remove(tmp))
	}
	if err := os.Rename(tmp, path); err != nil {
		return errors.Join(err, os.Remove(tmp))
	}
	return nil
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
