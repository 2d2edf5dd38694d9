package docker

import (
	"encoding/json"
	"fmt"
	"net"
	"os"

	"github.com/moby/moby/api/types/mount"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// EgressDir is where a sandbox with network access sees the directory of
// its egress proxy's socket.
const EgressDir = "/run/mcp-code-runner-egress"

// egressSocketName is the proxy socket's name in its directory.
const egressSocketName = "proxy.sock"

// Why a socket and not a Docker network: the sandbox keeps network mode
// none (no interface but loopback, no route, no DNS), so nothing it does
// can send a packet anywhere; its one way out is this socket, on which the
// server's proxy for that sandbox alone listens. A bridge network, even an
// --internal one, gives the sandbox an interface on a bridge whose host
// side has an address (the host's services listening on every address are
// then one hop away), and isolating it relies on the daemon's firewall
// rules, which daemons started with --iptables=false do not have.

// egressListener is the socket of one sandbox's egress proxy.
type egressListener struct {
	dir string
	ln  *net.UnixListener
}

// listenForEgress makes a directory under root holding the proxy's socket,
// which the sandbox's user may connect to, and serves e on it.
func listenForEgress(root string, e sandbox.Egress) (*egressListener, error) {
	if root == "" {
		return nil, fmt.Errorf("%w: network access reaches a sandbox only through a Unix socket, which needs a local Docker daemon and a runtime that lets sandboxes connect to host sockets (not gVisor, not a daemon in a VM); use network \"none\"", sandbox.ErrUnsupported)
	}
	dir, ln, err := listenForSandbox(root, "e", egressSocketName, "the egress socket")
	if err != nil {
		return nil, err
	}
	go func() { _ = e.Serve(ln) }()
	return &egressListener{dir: dir, ln: ln}, nil
}

func (l *egressListener) mount() mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: l.dir, Target: EgressDir, ReadOnly: true}
}

func (l *egressListener) env() string {
	spec, _ := json.Marshal(wire.Egress{Listen: wire.EgressListen, Socket: EgressDir + "/" + egressSocketName})
	return wire.EgressEnv + "=" + string(spec)
}

// close stops serving the sandbox and removes the socket.
func (l *egressListener) close() {
	if l == nil {
		return
	}
	_ = l.ln.Close()
	_ = os.RemoveAll(l.dir)
}
