package sandbox

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// EgressDir is where a sandbox with network access sees the directory of
// its egress proxy's socket, on every backend that bind-mounts it.
const EgressDir = "/run/mcp-code-runner-egress"

// egressSocketName is the proxy socket's name in its directory.
const egressSocketName = "proxy.sock"

// Why a socket and not a network interface: the sandbox keeps a network
// namespace of its own with loopback alone (no route, no DNS), so nothing
// it does can send a packet anywhere; its one way out is this socket, on
// which the server's proxy for that sandbox alone listens, and which the
// agent relays to from wire.EgressListen on the sandbox's loopback. A
// bridge, even an internal one, gives the sandbox an interface whose host
// side has an address (the host's services listening on every address are
// then one hop away), and isolating it relies on firewall rules.

// EgressSocket is the socket of one sandbox's egress proxy on the host.
type EgressSocket struct {
	// Dir holds the socket; the backend bind-mounts it read-only at
	// EgressDir.
	Dir string
	ln  *net.UnixListener
}

// ServeEgress makes a directory under root holding the proxy's socket,
// which the sandbox's user may connect to, and serves e on it.
func ServeEgress(root string, e Egress) (*EgressSocket, error) {
	dir, ln, err := ListenForSandbox(root, "e", egressSocketName, "the egress socket")
	if err != nil {
		return nil, err
	}
	go func() { _ = e.Serve(ln) }()
	return &EgressSocket{Dir: dir, ln: ln}, nil
}

// Env is the agent's environment entry (wire.EgressEnv) that tells it to
// relay wire.EgressListen to the socket.
func (s *EgressSocket) Env() string {
	spec, _ := json.Marshal(wire.Egress{Listen: wire.EgressListen, Socket: EgressDir + "/" + egressSocketName})
	return wire.EgressEnv + "=" + string(spec)
}

// Close stops serving the sandbox and removes the socket; a nil socket
// (a sandbox without network) has nothing to close.
func (s *EgressSocket) Close() {
	if s == nil {
		return
	}
	_ = s.ln.Close()
	_ = os.RemoveAll(s.Dir)
}

// ListenForSandbox makes a directory under root (its name starting with
// prefix) holding a socket called name, and listens on it. The sandbox's
// user differs from ours: it needs to search the directory and write to
// the socket. what names the socket in errors.
func ListenForSandbox(root, prefix, name, what string) (string, *net.UnixListener, error) {
	dir, err := os.MkdirTemp(root, prefix)
	if err != nil {
		return "", nil, fmt.Errorf("making the directory of %s: %w", what, err)
	}
	path := filepath.Join(dir, name)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		err = os.Chmod(dir, 0o755)
		if err == nil {
			err = os.Chmod(path, 0o666)
		}
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		_ = os.RemoveAll(dir)
		return "", nil, fmt.Errorf("listening on %s: %w", path, err)
	}
	return dir, ln, nil
}
