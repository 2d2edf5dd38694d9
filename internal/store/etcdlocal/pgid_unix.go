//go:build unix

package etcdlocal

import (
	"os/exec"
	"syscall"
)

// ownProcessGroup starts etcd in a process group of its own, so that a
// terminal's Ctrl-C reaches the caller, which stops etcd in order.
func ownProcessGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }
