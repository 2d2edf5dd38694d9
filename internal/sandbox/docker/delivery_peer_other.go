//go:build !linux

package docker

// daemonSharesFiles is known only on Linux, where the kernel names a Unix
// socket's peer; elsewhere the daemon is asked.
func daemonSharesFiles(string) (bool, string) {
	return false, "the daemon's view of this machine's files is asked, not inferred, on this OS"
}

// daemonUser is known only on Linux.
func daemonUser(string) (int, bool) { return 0, false }
