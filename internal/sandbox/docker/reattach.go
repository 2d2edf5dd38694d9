package docker

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Re-attaching to a session's sandbox after the server restarted.
//
// The sandbox's agent, created with a sandbox.Template.ReattachGrace, keeps
// its state when its connection ends and dials the socket path it was
// given again (agent.ServeReconnecting). The new server listens at that
// path (the socket's directory, which the container mounts, is kept for as
// long as the sandbox lives) and takes only a connection whose peer is the
// container's init process as the daemon reports it (State.Pid), asked of
// the kernel (SO_PEERCRED): the agent is that init, and no other process
// in the sandbox can have its PID. Nothing outside the sandbox can connect
// (the directory of every socket is 0700, this server's user's), and
// nothing inside can listen in the server's place (the directory is
// read-only there). No secret is involved, so none can leak.

var _ sandbox.Reattacher = (*Backend)(nil)

// reattachWait bounds the wait for a sandbox's agent to dial again: it
// retries at least every half second while its grace lasts.
const reattachWait = 15 * time.Second

// RefOf returns what re-attaching to sb needs: its container and its
// agent's socket directory, for a sandbox created with a ReattachGrace
// whose agent serves its socket.
func (b *Backend) RefOf(sb sandbox.Sandbox) (sandbox.Ref, bool) {
	s, ok := sb.(*agentconn.Sandbox)
	if !ok {
		return sandbox.Ref{}, false
	}
	l, ok := s.Link().(*link)
	if !ok || !l.reattachable || l.listener == nil {
		return sandbox.Ref{}, false
	}
	return sandbox.Ref{ID: l.id, SocketDir: l.listener.dir}, true
}

// checkSocketDir refuses a socket directory that is not one a server of
// this backend made on this machine: a re-attach renames and later removes
// it, so a record must not name just any path.
func checkSocketDir(dir string) error {
	parent := filepath.Dir(dir)
	if dir == "" || filepath.Dir(parent) != filepath.Clean(os.TempDir()) ||
		!strings.HasPrefix(filepath.Base(parent), socketsDirPrefix) || !strings.HasPrefix(filepath.Base(dir), "s") {
		return fmt.Errorf("%q is not an agent socket directory of this backend", dir)
	}
	return nil
}

// Reattach takes over the sandbox ref names: it moves the sandbox's socket
// directory into this server's (the container's mount follows the
// directory, not its path), listens there, and waits for the sandbox's
// agent, refusing any other peer.
func (b *Backend) Reattach(ctx context.Context, ref sandbox.Ref) (sandbox.Sandbox, error) {
	if err := checkSocketDir(ref.SocketDir); err != nil {
		return nil, err
	}
	ins, err := b.cli.ContainerInspect(ctx, ref.ID, client.ContainerInspectOptions{})
	if err != nil {
		return nil, fmt.Errorf("inspecting sandbox %s: %w", short(ref.ID), err)
	}
	c := ins.Container
	if c.Config == nil || c.Config.Labels[LabelManaged] != "true" {
		return nil, fmt.Errorf("container %s is not a sandbox of mcp-code-runner", short(ref.ID))
	}
	if c.State == nil || !c.State.Running || c.State.Pid <= 0 {
		return nil, fmt.Errorf("sandbox %s is no longer running", short(ref.ID))
	}
	own := b.SocketsDir()
	if own == "" {
		return nil, errors.New("this server gives its sandboxes no agent sockets, so it cannot re-attach to one")
	}
	dir := ref.SocketDir
	if filepath.Dir(dir) != own {
		moved := filepath.Join(own, filepath.Base(dir))
		if err := os.Rename(dir, moved); err != nil {
			return nil, fmt.Errorf("taking over the agent's socket directory: %w", err)
		}
		dir = moved
	}
	path := filepath.Join(dir, socketName)
	_ = os.Remove(path) // a socket the last server left, if it was killed while listening
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		if err = os.Chmod(path, 0o666); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listening for sandbox %s's agent: %w", short(ref.ID), err)
	}
	listener := &agentListener{dir: dir, ln: ln, keepDir: true}
	conn, err := b.acceptAgent(ctx, ln, c.State.Pid, ref.ID)
	_ = ln.Close() // removes the socket: no one else connects
	if err != nil {
		return nil, err
	}
	l := &link{b: b, id: ref.ID, ended: make(chan struct{}), listener: listener, reattachable: true}
	l.stdout = newStdoutSink(nil, channelSocket)
	l.stdout.conn = conn
	l.streamed.Store(true)
	// The wait outlives the call that re-attached: it ends with the sandbox.
	waitCtx := context.WithoutCancel(ctx)
	go func() {
		w := b.cli.ContainerWait(waitCtx, ref.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
		select {
		case <-w.Result:
		case err := <-w.Error:
			b.log.Debug("waiting for a re-attached sandbox to end", "id", short(ref.ID), "err", err)
		}
		close(l.ended)
		conn.Close()
	}()
	b.adopt(ref.ID)
	b.log.Info("re-attached to a session's sandbox", "container", short(ref.ID))
	return agentconn.New(ref.ID, l, b.log), nil
}

// acceptAgent accepts connections on ln until one comes from the process
// whose PID (in the daemon's view) is initPID, closing any other, within
// reattachWait.
func (b *Backend) acceptAgent(ctx context.Context, ln *net.UnixListener, initPID int, id string) (*net.UnixConn, error) {
	deadline := time.Now().Add(reattachWait)
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline = d
	}
	_ = ln.SetDeadline(deadline)
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return nil, fmt.Errorf("sandbox %s's agent did not connect again within %s: %w", short(id), reattachWait, err)
		}
		pid, err := peerPID(conn)
		switch {
		case err == nil && pid == initPID:
			return conn, nil
		case err == nil && pid == 0:
			conn.Close()
			return nil, fmt.Errorf("sandbox %s's agent cannot be told from other processes: this server runs in another PID namespace than the container runtime's processes (as in a container of its own), so it cannot re-attach to sessions", short(id))
		default:
			conn.Close()
			b.log.Warn("refused a connection to a sandbox's agent socket that did not come from its agent", "container", short(id), "peer_pid", pid, "agent_pid", initPID, "err", err)
		}
	}
}

// Remove removes the sandbox ref names and its socket directory.
func (b *Backend) Remove(_ context.Context, ref sandbox.Ref) {
	if ref.ID != "" {
		b.remove(ref.ID)
		b.disown(ref.ID)
	}
	if checkSocketDir(ref.SocketDir) == nil {
		_ = os.RemoveAll(ref.SocketDir)
	}
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}
