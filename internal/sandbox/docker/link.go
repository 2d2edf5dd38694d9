package docker

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// link is one started container, and its agent's stream: the agent's
// socket connection, or (when the agent could not connect) the attached
// standard streams. It is the container's [agentconn.Link].
type link struct {
	b        *Backend
	id       string
	att      client.HijackedResponse
	listener *agentListener        // nil without a socket
	egress   *sandbox.EgressSocket // nil without network access
	stdout   *stdoutSink           // settles the channel: the socket or the streams
	frames   *io.PipeReader        // the agent's frames when it serves on the streams
	diag     agentconn.Diagnostics
	ended    chan struct{} // closed when the attached stream ends
	// streamed says the agent's stream was handed out: only an agent that
	// has been reached can be told that nothing more comes.
	streamed atomic.Bool
	// reattachable says the agent outlives its connection (its sandbox
	// was created with a ReattachGrace, or re-attached to): closing the
	// connection does not end it, so Close removes it at once.
	reattachable bool
	// gvisor says the container runs under gVisor (the daemon's runsc).
	gvisor bool
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string { return l.diag.String() }

// Stream waits until the channel is settled: the agent of a new sandbox,
// pooled or not, may still be booting (under load, for a while). A sandbox
// that ended before its agent settled it never got a job: that is an error,
// which agentconn reads as sandbox.ErrDead, so that a pool sandbox that died
// while idle, before the pool learnt it, gives its job to another. A caller
// that went away meanwhile gets the attached streams, which then end at
// once.
func (l *link) Stream(ctx context.Context) (agentconn.Stream, error) {
	select {
	case <-l.stdout.chosen:
	case <-l.ended:
	case <-ctx.Done():
	}
	if !l.stdout.settled() {
		select {
		case <-l.ended:
			return agentconn.Stream{}, errors.New("the sandbox ended before its agent was reached")
		default:
		}
	}
	l.streamed.Store(true)
	if conn := l.stdout.socket(); conn != nil {
		return agentconn.Stream{Reader: conn, Writer: conn, CloseWrite: conn.CloseWrite}, nil
	}
	return agentconn.Stream{Reader: l.frames, Writer: l.att.Conn, CloseWrite: l.att.CloseWrite}, nil
}

// Kill stops the container and closes both channels, which ends a read of
// the agent's frames.
func (l *link) Kill(ctx context.Context) {
	_, _ = l.b.cli.ContainerKill(ctx, l.id, client.ContainerKillOptions{Signal: "KILL"})
	if l.att.Conn != nil {
		l.att.Close()
	}
	if c := l.stdout.socket(); c != nil {
		c.Close()
	}
}

func (l *link) OOMKilled(ctx context.Context) bool { return l.b.oomKilled(ctx, l.id) }

// OOMKills counts a gVisor sandbox's OOM kills in its host cgroup
// (agentconn.OOMCounter), where the daemon runs on this host: its agent
// reads gVisor's cgroup files, which count none. -1 for a container, whose
// agent counts them itself, and where the cgroup is not visible from here
// (a remote daemon).
func (l *link) OOMKills() int {
	if !l.gvisor {
		return -1
	}
	for _, f := range []string{
		"/sys/fs/cgroup/memory/docker/" + l.id + "/memory.oom_control",
		"/sys/fs/cgroup/memory/system.slice/docker-" + l.id + ".scope/memory.oom_control",
		"/sys/fs/cgroup/docker/" + l.id + "/memory.events",
		"/sys/fs/cgroup/system.slice/docker-" + l.id + ".scope/memory.events",
	} {
		if n, ok := sandbox.CgroupOOMKills(f); ok {
			return n
		}
	}
	return -1
}

// MemoryUsage reads the container's memory use in its host cgroup
// ([sandbox.MemoryReader]), where the daemon runs on this host; ok is
// false where the cgroup is not visible from here (a remote daemon).
func (l *link) MemoryUsage() (bytes uint64, ok bool) {
	return sandbox.CgroupMemoryUsage(
		"/sys/fs/cgroup/memory/docker/"+l.id+"/memory.usage_in_bytes",
		"/sys/fs/cgroup/memory/system.slice/docker-"+l.id+".scope/memory.usage_in_bytes",
		"/sys/fs/cgroup/docker/"+l.id+"/memory.current",
		"/sys/fs/cgroup/system.slice/docker-"+l.id+".scope/memory.current",
	)
}

// agentExitGrace bounds how long Close waits for the agent to exit on its
// own once told that nothing more comes.
const agentExitGrace = 3 * time.Second

// Close removes the container with a fresh context: the run's own may be
// cancelled already (client gone, timeout), and the container must go
// regardless. It first tells the agent that nothing more comes and lets it
// exit, which ends the container: the daemon then removes a stopped
// container, which costs it less than killing a running one (no runtime
// kill, no wait for the exit the kill causes).
func (l *link) Close() {
	l.letAgentExit()
	if l.att.Conn != nil {
		l.att.Close()
	}
	if l.listener != nil {
		l.listener.remove()
	}
	l.egress.Close()
	if l.stdout != nil {
		if c := l.stdout.socket(); c != nil {
			c.Close()
		}
	}
	l.b.remove(l.id)
	l.b.disown(l.id)
}

// letAgentExit closes the input of an agent that has been reached and
// waits, within agentExitGrace, for its container to end. An agent never
// reached (an idle pool sandbox) may not have connected yet, so it is left
// to the removal's kill.
func (l *link) letAgentExit() {
	if l.ended == nil || !l.streamed.Load() || l.reattachable {
		return
	}
	select {
	case <-l.ended:
		return
	default:
	}
	if l.stdout != nil && l.stdout.socket() != nil {
		_ = l.stdout.socket().CloseWrite()
	} else if l.att.Conn != nil {
		_ = l.att.CloseWrite()
	}
	t := time.NewTimer(agentExitGrace)
	defer t.Stop()
	select {
	case <-l.ended:
	case <-t.C:
	}
}
