//go:build linux

package crun

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
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
// down until an action script brings it up when CRIU has made the
// sandbox's namespaces, before any of its sockets or processes is
// restored: the sandbox comes back to the same namespace it had, loopback
// alone and up. (crun also gives CRIU a namespace that the configuration
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
	criuLoopbackUp  = "loopback-up"
)

// prepareCRIUNet writes CRIU's configuration files and the action script
// under dir, and returns the configuration file of each crun operation
// ("checkpoint", "restore"); it says why not when the host lacks what the
// script runs or dir cannot hold an executable, and CRIU then saves and
// restores the namespace as it does by default.
func prepareCRIUNet(dir string) (map[string]string, error) {
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
	common := "empty-ns net\nnetwork-lock skip\n"
	loUp := filepath.Join(dir, criuLoopbackUp)
	files := map[string]string{
		criuLoopbackUp:  script,
		criuDumpConf:    common,
		criuRestoreConf: common + "action-script " + loUp + "\n",
	}
	for name, content := range files {
		if err := writeFileAtomic(filepath.Join(dir, name), []byte(content), 0o700); err != nil {
			return nil, err
		}
	}
	return map[string]string{"checkpoint": filepath.Join(dir, criuDumpConf), "restore": filepath.Join(dir, criuRestoreConf)}, nil
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
