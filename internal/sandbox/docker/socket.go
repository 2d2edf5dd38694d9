package docker

import (
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/moby/moby/api/types/mount"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// SocketDir is where a sandbox sees the directory of the socket its agent
// connects to at boot (agent.SocketEnv).
const SocketDir = "/run/mcp-code-runner"

// socketName is the socket's name in its directory.
const socketName = "agent.sock"

// Why a socket: requests and results on the attached standard streams pass
// through the daemon and the container's shim, three processes each way;
// on an idle machine each hop costs tens of microseconds of wake-up. A
// Unix socket in a directory bind-mounted into the sandbox is one hop.
//
// Who can connect: on the host, only this server's user (the socket's
// parent directory is 0700); in the sandbox, only the agent, which connects
// before anything else there runs; once it has, the socket is removed.

// socketsUsable reports whether sandboxes can reach a socket this process
// makes: the daemon must share this machine's file system (a local Unix
// socket endpoint), and the runtime must not be gVisor, which does not let
// a sandbox connect to host sockets by default. Where this guesses wrong (a
// daemon in a VM behind a local socket, a VM runtime), the agent falls back
// to the attached streams.
func socketsUsable(daemonHost, runtime string) bool {
	return strings.HasPrefix(daemonHost, "unix://") && !strings.Contains(runtime, "runsc")
}

// socketsDirPrefix starts the name of a server's directory of agent sockets
// (in the system's temporary directory); the server's owner fields
// ([sandbox.Owner.NameFields]) follow, so that a later server can remove the
// one a dead server left.
const socketsDirPrefix = "mcp-code-runner-sockets-"

func socketsPrefix(o sandbox.Owner) string { return socketsDirPrefix + o.NameFields() + "-" }

// sweepSockets removes the socket directories of servers that are gone, as
// self tells ([sandbox.Owner.AliveNamed]), but not one holding a directory
// in keep (a live session's sandbox's, which the next server takes over),
// and none at all with keepAll.
func sweepSockets(self sandbox.Owner, keep map[string]bool, keepAll bool) (removed int) {
	if keepAll {
		return 0
	}
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), socketsDirPrefix)
		fields := strings.Split(rest, "-") // pid, start time, host tag, random
		if !ok || !e.IsDir() || len(fields) < 3 || len(fields) > 4 {
			continue
		}
		if _, err := strconv.Atoi(fields[0]); err != nil {
			continue // not a name this server makes
		}
		hostTag := ""
		if len(fields) == 4 {
			hostTag = fields[2]
		}
		if self.AliveNamed(fields[0], fields[1], hostTag) {
			continue // its server still runs, or is not this host's to judge
		}
		if holdsKept(filepath.Join(os.TempDir(), e.Name()), keep) {
			continue
		}
		if os.RemoveAll(filepath.Join(os.TempDir(), e.Name())) == nil {
			removed++
		}
	}
	return removed
}

// holdsKept reports whether a directory in keep is directly under dir.
func holdsKept(dir string, keep map[string]bool) bool {
	for k := range keep {
		if filepath.Dir(k) == dir {
			return true
		}
	}
	return false
}

// testHookListening, when set, sees each listener before its sandbox is
// created.
var testHookListening func(*agentListener)

// agentListener is the socket one sandbox's agent connects to.
type agentListener struct {
	dir string
	ln  *net.UnixListener
	// keepDir keeps the directory once the agent connected, for the life
	// of the sandbox: the agent of a sandbox that can be re-attached to
	// dials a socket there again after its server went away.
	keepDir bool
}

// listenForAgent makes a directory under root holding a socket that the
// sandbox's agent (another user) may connect to, and listens on it.
func listenForAgent(root string) (*agentListener, error) {
	dir, ln, err := sandbox.ListenForSandbox(root, "s", socketName, "the agent's socket")
	if err != nil {
		return nil, err
	}
	return &agentListener{dir: dir, ln: ln}, nil
}

// mount is the read-only bind mount that shows the socket to the sandbox.
func (l *agentListener) mount() mount.Mount {
	return mount.Mount{Type: mount.TypeBind, Source: l.dir, Target: SocketDir, ReadOnly: true}
}

// accept waits for the agent's connection, then removes the socket so that
// no one else can connect.
func (l *agentListener) accept() (*net.UnixConn, error) {
	c, err := l.ln.AcceptUnix()
	l.close()
	return c, err
}

// close stops listening (ending a waiting accept) and removes the socket
// and, unless it is kept, its directory.
func (l *agentListener) close() {
	_ = l.ln.Close()
	if !l.keepDir {
		_ = os.RemoveAll(l.dir)
	}
}

// remove stops listening and removes the directory, kept or not: the
// sandbox is gone.
func (l *agentListener) remove() {
	_ = l.ln.Close()
	_ = os.RemoveAll(l.dir)
}

// The channel an agent serves on, as far as the server knows.
const (
	channelUnknown = iota
	channelSocket
	channelStdio
)

// stdoutSink takes the agent's standard output from the attached stream.
// An agent given a socket writes there only if it could not connect (a
// Hello frame first), so its first byte settles the channel as stdio and
// the frames go on to the pipe Exec reads; once the socket is the channel,
// anything written there is dropped.
type stdoutSink struct {
	mu      sync.Mutex
	channel int
	conn    *net.UnixConn // the agent's connection, once it is the channel
	pipe    *io.PipeWriter
	chosen  chan struct{} // closed when the channel is settled
}

func newStdoutSink(pipe *io.PipeWriter, channel int) *stdoutSink {
	s := &stdoutSink{pipe: pipe, channel: channel, chosen: make(chan struct{})}
	if channel != channelUnknown {
		close(s.chosen)
	}
	return s
}

func (s *stdoutSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	if s.channel == channelUnknown && len(p) > 0 {
		s.channel = channelStdio
		close(s.chosen)
	}
	channel := s.channel
	s.mu.Unlock()
	if channel != channelStdio {
		return len(p), nil
	}
	return s.pipe.Write(p)
}

// connected settles the channel as the agent's socket connection c unless
// it is settled already (then c is closed).
func (s *stdoutSink) connected(c *net.UnixConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.channel != channelUnknown {
		c.Close()
		return
	}
	s.channel, s.conn = channelSocket, c
	close(s.chosen)
}

// settled reports whether the channel is settled: the agent connected, or
// it serves (or was only offered) the standard streams.
func (s *stdoutSink) settled() bool {
	select {
	case <-s.chosen:
		return true
	default:
		return false
	}
}

// socket returns the agent's connection if it is the channel, else nil.
func (s *stdoutSink) socket() *net.UnixConn {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.conn
}
