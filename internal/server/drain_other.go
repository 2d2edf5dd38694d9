//go:build !linux

package server

import (
	"net"
	"time"
)

// refuseNew does nothing where sockets take no filter: closing the
// listener may reset connections still queued in it.
func refuseNew(net.Listener, time.Duration) {}
