//go:build linux

package crun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Sandboxes that outlive their server, and re-attaching to them.
//
// A session's sandbox (a template with a ReattachGrace) is started like
// any other, detached, but its agent's standard streams are not pipes to
// the server (they would end with it, and a write to them would then kill
// the agent): its input is /dev/null, its output a log in its bundle, and
// it serves the server over a Unix socket that it dials at boot and dials
// again whenever its connection ends (agent.ServeReconnecting). The
// container runs in a session of its own, not as a child of the server, so
// a kill -9 of the server leaves it running.
//
// Who can take the connection: the socket's directory is shown read-only
// in the sandbox, so nothing there can listen in the server's place, and
// its parent on the host is root's alone (0700), so nothing outside but
// root reaches it. The server takes only a connection whose peer
// (SO_PEERCRED) is the container's init as crun reports it: the agent,
// which no other process in the sandbox can be. As on the Docker backend,
// no secret is involved.

var _ sandbox.Reattacher = (*Backend)(nil)

// agentBase holds the directories of the sandboxes' agent sockets, one per
// sandbox named after its host name, as egressBase does and for the same
// reason: a socket's path must fit in 108 bytes.
const agentBase = "/run/mcr-crun-agent"

// agentSocketMount is where a sandbox sees its agent socket's directory,
// the Docker backend's path.
const agentSocketMount = "/run/mcp-code-runner"

// agentSocketName is the socket's name in its directory.
const agentSocketName = "agent.sock"

// agentLog is the file that takes a sandbox's agent's standard output and
// error when the agent serves a socket. It lives in agentLogDir, not in
// the bundle, because a checkpoint (checkpoint.go) keeps only the open
// files that its sandbox names by a path of its own: the directory, a
// tmpfs of its own on the host (agentLogBytes), is bound into the sandbox
// at agentLogMount (root's, 0711: nothing there is listed) and the agent
// opens the log itself (wire.LogEnv), so a restored agent gets it back by
// that path. The log is the sandbox user's, as the agent is: a program
// may write to it, and a sandbox's log says what its agent and program
// wrote.
const agentLog = "agent.log"

// agentLogMount is where a sandbox sees its agent log's directory.
const agentLogMount = agentSocketMount + "/log"

// agentLogBase holds the directories of the sandboxes' agent logs, one
// per sandbox named as its socket's directory is. Not inside that
// directory: a mount under a bind mount's source makes CRIU's restore of
// the bind fail.
const agentLogBase = "/run/mcr-crun-agent-log"

// agentLogDir is the directory of sandbox id's agent log; its mount point
// in the sandbox is the directory "log" of its socket's directory.
func agentLogDir(id string) string {
	return filepath.Join(agentLogBase, id[strings.LastIndexByte(id, '-')+1:])
}

// agentLogBytes bounds an agent's log: the sandbox's user may write to it
// (see agentLog), and it is the host's memory.
const agentLogBytes = 1 << 20

// mountLogDir makes dir, an agent's log directory, a tmpfs of
// agentLogBytes of its own.
func mountLogDir(dir string) error {
	if err := os.MkdirAll(agentLogBase, 0o700); err != nil {
		return fmt.Errorf("crun sandbox agent log directory: %w", err)
	}
	if err := os.Mkdir(dir, 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("crun sandbox agent log directory: %w", err)
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=16,mode=0711", agentLogBytes)
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, opts); err != nil {
		return fmt.Errorf("crun sandbox agent log directory: %w", err)
	}
	return nil
}

// agentLogPath is sandbox id's agent log.
func agentLogPath(id string) string { return filepath.Join(agentLogDir(id), agentLog) }

// ownerFile, in a sandbox's bundle, names the server that re-attached to
// it (Owner.NameFields): the sweep judges the sandbox by that server, not
// by the one its name carries.
const ownerFile = "owner"

// Waits for an agent's connection: at boot it dials first thing; a
// reconnecting one retries at least every half second.
const (
	bootConnectWait = 30 * time.Second
	reattachWait    = 15 * time.Second
)

// agentDir is the directory of sandbox id's agent socket.
func agentDir(id string) string {
	return filepath.Join(agentBase, id[strings.LastIndexByte(id, '-')+1:])
}

// listenForAgent makes sandbox id's socket directory and listens there.
func listenForAgent(id string) (*net.UnixListener, error) {
	if err := os.MkdirAll(agentBase, 0o700); err != nil {
		return nil, fmt.Errorf("crun sandbox agent socket directory: %w", err)
	}
	dir := agentDir(id)
	// 0755: the sandbox's user searches it through its mount; the parent
	// keeps everyone else out.
	if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("crun sandbox agent socket directory: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "log"), 0o711); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("crun sandbox agent log mount point: %w", err)
	}
	if err := mountLogDir(agentLogDir(id)); err != nil {
		return nil, err
	}
	return listenIn(dir)
}

// listenIn listens on the agent socket in dir, replacing one a killed
// server left, writable by the sandbox's user.
func listenIn(dir string) (*net.UnixListener, error) {
	path := filepath.Join(dir, agentSocketName)
	_ = os.Remove(path)
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err == nil {
		if err = os.Chmod(path, 0o666); err != nil {
			_ = ln.Close()
		}
	}
	if err != nil {
		return nil, fmt.Errorf("listening for a crun sandbox's agent: %w", err)
	}
	return ln, nil
}

// startReattachable runs the container of bundle detached, its agent's
// streams on /dev/null and its log, and waits for the agent's connection
// on ln, which it then closes.
func (b *Backend) startReattachable(ctx context.Context, rt ociRuntime, id, bundle string, ln *net.UnixListener) (*link, error) {
	logPath := agentLogPath(id)
	out, err := os.OpenFile(logPath, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err == nil {
		err = out.Chown(wire.SandboxUID, wire.SandboxGID) // the agent opens it again (wire.LogEnv)
	}
	if err != nil {
		return nil, fmt.Errorf("crun sandbox agent log: %w", err)
	}
	pidFile := filepath.Join(bundle, "pid")
	crunLog := filepath.Join(bundle, "crun.log")
	// As start: not the caller's context.
	rctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	cmd := rt.command(rctx, crunLog, "run", "--detach", "--bundle", bundle, "--pid-file", pidFile, id)
	cmd.Stdout, cmd.Stderr = out, out // Stdin nil: /dev/null
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	runErr := cmd.Run()
	cancel()
	_ = out.Close()
	if runErr != nil {
		msg, _ := os.ReadFile(crunLog) // in our bundle
		return nil, fmt.Errorf("starting crun sandbox: %v: %s", runErr, crunMessage(msg))
	}
	proc, err := processOf(pidFile)
	if err != nil {
		return nil, err
	}
	l, err := b.connect(ctx, id, proc, ln, bootConnectWait)
	if err != nil {
		_ = proc.Release()
		return nil, err
	}
	l.logPath = logPath
	return l, nil
}

// connect watches proc, the sandbox's init, and waits within wait for its
// agent's connection on ln, which it closes (removing the socket: nobody
// else connects).
func (b *Backend) connect(ctx context.Context, id string, proc *os.Process, ln *net.UnixListener, wait time.Duration) (*link, error) {
	ended, err := watchExit(proc.Pid)
	if err != nil {
		_ = ln.Close()
		return nil, err
	}
	stop := context.AfterFunc(ctx, func() { _ = ln.Close() })
	go func() {
		<-ended
		_ = ln.Close() // an agent that died never connects
	}()
	conn, err := acceptAgent(ln, proc.Pid, time.Now().Add(wait), b.log, id)
	stop()
	_ = ln.Close()
	if err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("waiting for crun sandbox %s's agent: %w", id, ctx.Err())
		}
		select {
		case <-ended:
			err = fmt.Errorf("crun sandbox %s ended before its agent connected", id)
		default:
		}
		return nil, err
	}
	go func() {
		<-ended
		_ = conn.Close()
	}()
	return &link{b: b, id: id, proc: proc, conn: conn, ended: ended}, nil
}

// acceptAgent accepts connections on ln until one comes from initPID (in
// this server's PID namespace) or deadline passes, closing any other.
func acceptAgent(ln *net.UnixListener, initPID int, deadline time.Time, log interface {
	Warn(string, ...any)
}, id string) (*net.UnixConn, error) {
	_ = ln.SetDeadline(deadline)
	for {
		conn, err := ln.AcceptUnix()
		if err != nil {
			return nil, fmt.Errorf("crun sandbox %s's agent did not connect: %w", id, err)
		}
		pid, err := peerPID(conn)
		if err == nil && pid == initPID {
			return conn, nil
		}
		_ = conn.Close()
		log.Warn("refused a connection to a crun sandbox's agent socket that did not come from its agent", "id", id, "peer_pid", pid, "agent_pid", initPID, "err", err)
	}
}

// peerPID is the process at the other end of conn, as this process's PID
// namespace numbers it.
func peerPID(conn *net.UnixConn) (int, error) {
	raw, err := conn.SyscallConn()
	if err != nil {
		return 0, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return 0, err
	}
	if credErr != nil {
		return 0, credErr
	}
	return int(cred.Pid), nil
}

// watchExit returns a channel closed when process pid ends, watched
// through a pidfd (it is not this process's child, so it cannot be
// waited for).
func watchExit(pid int) (chan struct{}, error) {
	fd, err := unix.PidfdOpen(pid, unix.PIDFD_NONBLOCK)
	if err != nil {
		return nil, fmt.Errorf("watching crun sandbox process %d: %w", pid, err)
	}
	f := os.NewFile(uintptr(fd), "pidfd")
	ended := make(chan struct{})
	exited := func(fd uintptr, wait int) bool {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, wait)
		return n > 0 || (err != nil && !errors.Is(err, unix.EINTR))
	}
	go func() {
		defer close(ended)
		defer f.Close()
		rc, err := f.SyscallConn()
		if err == nil {
			// The runtime's poller wakes this when the pidfd is readable.
			err = rc.Read(func(fd uintptr) bool { return exited(fd, 0) })
		}
		if err != nil { // a pidfd the poller does not take: a thread waits
			_ = rc.Control(func(fd uintptr) {
				done := false
				for !done {
					done = exited(fd, -1)
				}
			})
		}
	}()
	return ended, nil
}

// logTail is the end of an agent's log, for diagnostics.
func logTail(path string) string {
	f, err := os.Open(path) // in our bundle
	if err != nil {
		return ""
	}
	defer f.Close()
	const most = 4 << 10
	if fi, err := f.Stat(); err == nil && fi.Size() > most {
		_, _ = f.Seek(fi.Size()-most, io.SeekStart)
	}
	data, _ := io.ReadAll(io.LimitReader(f, most))
	return strings.TrimSpace(string(data))
}

// RefOf returns what re-attaching to sb needs: its container and its
// agent's socket directory, for a sandbox created with a ReattachGrace.
func (b *Backend) RefOf(sb sandbox.Sandbox) (sandbox.Ref, bool) {
	s, ok := sb.(*agentconn.Sandbox)
	if !ok {
		return sandbox.Ref{}, false
	}
	l, ok := s.Link().(*link)
	if !ok || l.conn == nil {
		return sandbox.Ref{}, false
	}
	return sandbox.Ref{ID: l.id, SocketDir: agentDir(l.id)}, true
}

// checkRef refuses a reference that does not name a sandbox of this
// backend and its own socket directory: a re-attach listens there and a
// removal removes it, so a record must not name just any path.
func checkRef(ref sandbox.Ref) error {
	if _, ok := parseID(ref.ID); !ok || strings.ContainsAny(ref.ID, "/.") {
		return fmt.Errorf("%q is not a crun sandbox of mcp-code-runner", ref.ID)
	}
	if ref.SocketDir != agentDir(ref.ID) {
		return fmt.Errorf("%q is not the agent socket directory of crun sandbox %s", ref.SocketDir, ref.ID)
	}
	return nil
}

// containerState is what `crun state` says of a container.
type containerState struct {
	Status string `json:"status"`
	PID    int    `json:"pid"`
}

func (b *Backend) state(id string) (containerState, error) {
	out, err := b.runtimeOf(id).command(context.Background(), "", "state", id).Output()
	if err != nil {
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			return containerState{}, fmt.Errorf("crun sandbox %s is gone: %s", id, crunMessage(ee.Stderr))
		}
		return containerState{}, fmt.Errorf("asking crun for sandbox %s: %w", id, err)
	}
	var st containerState
	if err := json.Unmarshal(out, &st); err != nil {
		return containerState{}, fmt.Errorf("crun's state of sandbox %s: %w", id, err)
	}
	return st, nil
}

// Reattach takes over the sandbox ref names: it listens on its agent's
// socket and waits for the agent, refusing any other peer. The sandbox is
// this server's from then on (its bundle's owner file says so to every
// sweep).
func (b *Backend) Reattach(ctx context.Context, ref sandbox.Ref) (sandbox.Sandbox, error) {
	if err := checkRef(ref); err != nil {
		return nil, err
	}
	bundle := filepath.Join(b.bundlesDir(), ref.ID)
	if _, err := os.Stat(bundle); err != nil {
		return nil, fmt.Errorf("crun sandbox %s is gone: %w", ref.ID, err)
	}
	st, err := b.state(ref.ID)
	if err != nil {
		return nil, err
	}
	if st.Status != "running" || st.PID <= 0 {
		return nil, fmt.Errorf("crun sandbox %s is no longer running (%s)", ref.ID, st.Status)
	}
	proc, err := os.FindProcess(st.PID)
	if err != nil {
		return nil, err
	}
	ln, err := listenIn(ref.SocketDir)
	if err != nil {
		_ = proc.Release()
		return nil, err
	}
	l, err := b.connect(ctx, ref.ID, proc, ln, reattachWait)
	if err != nil {
		_ = proc.Release()
		return nil, err
	}
	l.logPath = agentLogPath(ref.ID)
	if err := b.adopt(ref.ID); err != nil {
		_ = l.conn.Close()
		_ = proc.Release()
		return nil, err
	}
	b.log.Info("re-attached to a session's crun sandbox", "id", ref.ID)
	return agentconn.New(ref.ID, l, b.log), nil
}

// Remove removes the sandbox ref names, with its socket directory.
func (b *Backend) Remove(_ context.Context, ref sandbox.Ref) {
	if checkRef(ref) != nil {
		return
	}
	b.destroy(ref.ID)
	b.disown(ref.ID)
}

// SetKeep makes the sweep keep the sandboxes that keep lists (the live
// sessions' sandboxes, which the state store names), though their server is
// gone: a server re-attaches to them; and the session sandboxes of another
// store while their agents wait for one. It is called before the first
// sandbox and the first sweep.
func (b *Backend) SetKeep(keep sandbox.Keep) { b.keep = keep }

// kept lists the IDs keep names.
func (b *Backend) kept(ctx context.Context) (map[string]bool, error) {
	ids := map[string]bool{}
	if b.keep.Sandboxes == nil {
		return ids, nil
	}
	refs, err := b.keep.Sandboxes(ctx)
	for _, r := range refs {
		ids[r.ID] = true
	}
	return ids, err
}

// adopt makes sandbox id this server's: in memory, and in its bundle's
// owner file for every server's sweep.
func (b *Backend) adopt(id string) error {
	path := filepath.Join(b.bundlesDir(), id, ownerFile)
	tmp := path + ".tmp"
	err := os.WriteFile(tmp, []byte(b.owner.NameFields()+"\n"), 0o600)
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		return fmt.Errorf("recording crun sandbox %s's new owner: %w", id, err)
	}
	b.adoptedIDs.Store(id, true)
	return nil
}

func (b *Backend) disown(id string) { b.adoptedIDs.Delete(id) }

// ownerOf is the server sandbox id belongs to: the one that re-attached to
// it last (its owner file), or the one its name carries.
func (b *Backend) ownerOf(id string, s sandboxID) (pid, start, hostTag string) {
	data, err := os.ReadFile(filepath.Join(b.bundlesDir(), id, ownerFile)) // in our bundle
	if err == nil {
		if f := strings.Split(strings.TrimSpace(string(data)), "-"); len(f) == 3 {
			return f[0], f[1], f[2]
		}
	}
	return s.pid, s.start, s.hostTag
}
