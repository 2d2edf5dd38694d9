package docker

import (
	"fmt"

	"github.com/moby/moby/api/types/mount"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Why a socket and not a Docker network: the sandbox keeps network mode
// none, and its one way out is the socket of its own egress proxy (see
// sandbox.EgressSocket). A bridge network, even an --internal one, relies
// for its isolation on the daemon's firewall rules, which daemons started
// with --iptables=false do not have.

// listenForEgress makes a directory under root holding the proxy's socket,
// which the sandbox's user may connect to, and serves e on it.
func listenForEgress(root string, e sandbox.Egress) (*sandbox.EgressSocket, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: network access reaches a sandbox only through a Unix socket, which needs a local Docker daemon and a runtime that lets sandboxes connect to host sockets (not gVisor, not a daemon in a VM); use network \"none\"", sandbox.ErrUnsupported)
	}
	return sandbox.ServeEgress(root, e)
}

// egressMount shows the proxy's socket directory to the sandbox.
func egressMount(s *sandbox.EgressSocket) mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: s.Dir, Target: sandbox.EgressDir, ReadOnly: true}
}
