//go:build linux

package server

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// refuseNew makes ln's socket drop every new connection's SYN while the
// connections already in its accept queue stay there to be served, and
// returns once that queue is empty (at most within wait). Closing a
// listener resets the connections queued in it, whose clients have sent
// their calls and get no answer; dropped SYNs are sent again by the
// clients, and by then the closed port refuses them, which a client (or a
// balancer) knows it may send elsewhere.
func refuseNew(ln net.Listener, wait time.Duration) {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return
	}
	raw, err := tl.SyscallConn()
	if err != nil {
		return
	}
	dropAll := []unix.SockFilter{{Code: unix.BPF_RET | unix.BPF_K, K: 0}}
	attached := false
	_ = raw.Control(func(fd uintptr) {
		attached = unix.SetsockoptSockFprog(int(fd), unix.SOL_SOCKET, unix.SO_ATTACH_FILTER,
			&unix.SockFprog{Len: uint16(len(dropAll)), Filter: &dropAll[0]}) == nil
	})
	if !attached {
		return
	}
	// For a listening socket, TCP_INFO's unacked is its accept queue's
	// length; Serve keeps accepting meanwhile.
	deadline := time.Now().Add(wait)
	for time.Now().Before(deadline) {
		queued := uint32(0)
		_ = raw.Control(func(fd uintptr) {
			if info, err := unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO); err == nil {
				queued = info.Unacked
			}
		})
		if queued == 0 {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
}
