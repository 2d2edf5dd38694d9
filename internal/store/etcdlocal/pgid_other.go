//go:build !unix

package etcdlocal

import "os/exec"

// ownProcessGroup leaves etcd in the caller's process group where there
// are no Unix process groups.
func ownProcessGroup(*exec.Cmd) {}
