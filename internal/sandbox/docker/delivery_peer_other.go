//go:build !linux

package docker

import (
	"errors"
	"net"
)

// daemonSharesFiles is known only on Linux, where the kernel names a Unix
// socket's peer; elsewhere the daemon is asked.
func daemonSharesFiles(string) (bool, string) {
	return false, "the daemon's view of this machine's files is asked, not inferred, on this OS"
}

// daemonUser is known only on Linux.
func daemonUser(string) (int, bool) { return 0, false }

// peerPID is known only on Linux: elsewhere no agent connection passes
// the re-attach check.
func peerPID(*net.UnixConn) (int, error) {
	return 0, errors.New("the peer of a socket is known only on Linux")
}
