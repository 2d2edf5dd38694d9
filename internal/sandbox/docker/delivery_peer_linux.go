package docker

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// daemonSharesFiles reports whether the daemon behind a unix:// host is a
// process in this process's mount namespace with the same root directory,
// which then sees this server's files at the same paths. It asks the
// kernel, not the daemon: the peer of the socket (SO_PEERCRED) and its
// /proc entries. why says what was found either way. Any doubt (another
// PID namespace, a proxy in front of the daemon, /proc entries this user
// may not read) answers false, and the caller asks the daemon instead.
func daemonSharesFiles(daemonHost string) (shares bool, why string) {
	path, ok := strings.CutPrefix(daemonHost, "unix://")
	if !ok {
		return false, "the daemon is not on a Unix socket"
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return false, "dialling " + path + ": " + err.Error()
	}
	defer conn.Close()
	cred, err := peerCred(conn.(*net.UnixConn))
	if err != nil {
		return false, err.Error()
	}
	if cred.Pid <= 0 {
		return false, "the daemon is in another PID namespace"
	}
	proc := fmt.Sprintf("/proc/%d", cred.Pid)
	exe, err := os.Readlink(proc + "/exe")
	if err != nil {
		return false, "reading the daemon's executable: " + err.Error()
	}
	switch filepath.Base(exe) {
	case "dockerd", "podman":
	default:
		// A proxy (Docker Desktop's, a socket forwarder) may sit in front
		// of a daemon that sees other files.
		return false, "the socket is served by " + exe + ", not by dockerd or podman"
	}
	for _, link := range []string{"ns/mnt", "root"} {
		theirs, err := os.Readlink(proc + "/" + link)
		if err != nil {
			return false, "reading the daemon's " + link + ": " + err.Error()
		}
		ours, err := os.Readlink("/proc/self/" + link)
		if err != nil {
			return false, "reading this process's " + link + ": " + err.Error()
		}
		if theirs != ours {
			return false, fmt.Sprintf("the daemon's %s is %s, this process's %s", link, theirs, ours)
		}
	}
	return true, fmt.Sprintf("the daemon (%s, pid %d) shares this process's mount namespace and root", filepath.Base(exe), cred.Pid)
}

// peerCred is the kernel's record of the process at the other end of conn.
func peerCred(conn *net.UnixConn) (*syscall.Ucred, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *syscall.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = syscall.GetsockoptUcred(int(fd), syscall.SOL_SOCKET, syscall.SO_PEERCRED)
	}); err != nil || credErr != nil {
		return nil, fmt.Errorf("the socket's peer is unknown (%v%v)", err, credErr)
	}
	return cred, nil
}

// peerPID is the process at the other end of conn, as this process's PID
// namespace numbers it: 0 when it lives outside that namespace's view.
func peerPID(conn *net.UnixConn) (int, error) {
	cred, err := peerCred(conn)
	if err != nil {
		return 0, err
	}
	return int(cred.Pid), nil
}

// daemonUser returns the uid of the daemon behind a unix:// host, when it
// is another user than this process's (a rootless engine's user, say).
func daemonUser(daemonHost string) (uid int, other bool) {
	path, ok := strings.CutPrefix(daemonHost, "unix://")
	if !ok {
		return 0, false
	}
	conn, err := net.Dial("unix", path)
	if err != nil {
		return 0, false
	}
	defer conn.Close()
	cred, err := peerCred(conn.(*net.UnixConn))
	if err != nil || int(cred.Uid) == os.Geteuid() {
		return 0, false
	}
	return int(cred.Uid), true
}
