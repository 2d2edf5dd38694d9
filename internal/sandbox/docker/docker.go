// Package docker is the Docker sandbox backend: every run gets a new
// container, hardened by default, and removed afterwards whatever happens.
// The container's agent is reached on a Unix socket, or on the attached
// standard streams where the socket cannot cross to it; either is the
// byte stream agentconn speaks the agent protocol over.
package docker

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Labels that mark a container as one of ours.
const (
	LabelManaged   = "io.mcp-code-runner.managed"
	LabelOwner     = "io.mcp-code-runner.owner"
	LabelOwnerHost = "io.mcp-code-runner.owner-host"
	LabelOwnerPID  = "io.mcp-code-runner.owner-pid"
	LabelOwnerBoot = "io.mcp-code-runner.owner-start"
	LabelExpires   = "io.mcp-code-runner.expires"
	LabelPurpose   = "io.mcp-code-runner.purpose"
)

// AgentPath is where every container sees the agent binary. The workspace
// and the user are the contract's (wire.WorkspacePath, wire.SandboxUser).
const AgentPath = "/opt/mcp-code-runner/agent"

// tmpfsInodes is the most files and directories each tmpfs may hold.
const tmpfsInodes = 65536

// expiryMargin is added to a run's deadline for its expiry label: a container
// past it is removed by any server's sweep.
const expiryMargin = 2 * time.Minute

// Options configure the backend.
type Options struct {
	// AgentPath is the static agent binary on the daemon's host, mounted
	// read-only into every container.
	AgentPath string
	// Runtime is the OCI runtime ("" for the daemon's default, or "runsc").
	Runtime string
	// Logger receives the backend's logs.
	Logger *slog.Logger
}

// Backend runs sandboxes as Docker containers.
type Backend struct {
	cli   *client.Client
	opts  Options
	owner owner
	log   *slog.Logger
	// useSockets says whether agents are given sockets (socket.go); their
	// directory is made when the first sandbox needs it, so that a backend
	// that never creates one (doctor, tests) leaves nothing behind.
	useSockets  bool
	socketsOnce sync.Once
	sockets     string // "" until made, or if it could not be

}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a backend using cli.
func New(cli *client.Client, opts Options) (*Backend, error) {
	if opts.AgentPath == "" {
		return nil, errors.New("docker backend: the agent path is required")
	}
	if err := checkStatic(opts.AgentPath); err != nil {
		return nil, err
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Backend{cli: cli, opts: opts, owner: currentOwner(), log: log,
		useSockets: socketsUsable(cli.DaemonHost(), opts.Runtime)}, nil
}

// Client returns the Docker client the backend uses.
func (b *Backend) Client() *client.Client { return b.cli }

// AgentPath returns the agent binary mounted into every sandbox.
func (b *Backend) AgentPath() string { return b.opts.AgentPath }

// UsesSockets reports whether agents are given sockets to connect to.
func (b *Backend) UsesSockets() bool { return b.useSockets }

// SocketsDir is the directory of the sockets agents connect to, made on
// first use; "" when sandboxes use the attached streams only.
func (b *Backend) SocketsDir() string {
	if !b.useSockets {
		return ""
	}
	b.socketsOnce.Do(func() {
		dir, err := os.MkdirTemp("", socketsPrefix(b.owner))
		if err != nil {
			b.log.Warn("sandboxes will use the attached streams only: no directory for agent sockets", "err", err)
			return
		}
		b.sockets = dir
	})
	return b.sockets
}

// Close closes the Docker client and removes the sockets' directory.
func (b *Backend) Close() error {
	b.socketsOnce.Do(func() {}) // none is made from now on
	if b.sockets != "" {
		_ = os.RemoveAll(b.sockets)
	}
	return b.cli.Close()
}

// Check pings the daemon.
func (b *Backend) Check(ctx context.Context) error {
	if err := Ping(ctx, b.cli); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err) // Ping says what to do
	}
	return nil
}

// CheckImage reports whether image is present locally.
func (b *Backend) CheckImage(ctx context.Context, image string) error {
	_, err := b.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		return nil
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: image %s is not present", sandbox.ErrImageMissing, image)
	case client.IsErrConnectionFailed(err):
		return b.unavailable("inspecting image "+image, err)
	default:
		return fmt.Errorf("inspecting image %s: %w", image, err)
	}
}

// ContainerConfig returns the hardened configuration of a sandbox for spec.
// It is exported so tests can assert every control.
func (b *Backend) ContainerConfig(t sandbox.Template) (*container.Config, *container.HostConfig) {
	r := t.Resources
	memory := int64(r.MemoryMB) << 20
	pids := int64(r.PidsLimit)
	expires := time.Now().Add(t.MaxLife + expiryMargin).Unix()
	labels := map[string]string{
		LabelManaged:   "true",
		LabelOwner:     b.owner.id,
		LabelOwnerHost: b.owner.host,
		LabelOwnerPID:  strconv.Itoa(b.owner.pid),
		LabelOwnerBoot: b.owner.start,
		LabelExpires:   strconv.FormatInt(expires, 10),
		LabelPurpose:   t.Purpose,
	}
	cfg := &container.Config{
		Image:           t.Image,
		Cmd:             []string{AgentPath, "agent"},
		Entrypoint:      []string{},
		User:            wire.SandboxUser,
		WorkingDir:      wire.WorkspacePath,
		Env:             sandbox.AgentEnv(t),
		OpenStdin:       true,
		StdinOnce:       true,
		AttachStdin:     true,
		AttachStdout:    true,
		AttachStderr:    true,
		NetworkDisabled: true,
		Labels:          labels,
	}
	// No separate init: the agent is PID 1 (it reaps orphans, and nothing
	// else then holds the container's output stream; see agent.BecomeInit).
	noInit := false
	host := &container.HostConfig{
		NetworkMode:    "none",
		CapDrop:        []string{"ALL"},
		SecurityOpt:    []string{"no-new-privileges"},
		ReadonlyRootfs: true,
		Init:           &noInit,
		IpcMode:        "private",
		LogConfig:      container.LogConfig{Type: "none"},
		Runtime:        b.opts.Runtime,
		Tmpfs: map[string]string{
			// nr_inodes bounds the files too: a flood of empty files then gets
			// ENOSPC instead of spending the memory limit on inodes.
			"/tmp": fmt.Sprintf("rw,nosuid,nodev,size=%dm,nr_inodes=%d,mode=1777", r.TmpMB, tmpfsInodes),
			wire.WorkspacePath: fmt.Sprintf("rw,nosuid,nodev,exec,size=%dm,nr_inodes=%d,uid=%d,gid=%d,mode=0755",
				r.WorkspaceMB, tmpfsInodes, wire.SandboxUID, wire.SandboxGID),
		},
		ShmSize: 16 << 20,
		Mounts: []mount.Mount{{
			Type:     mount.TypeBind,
			Source:   b.opts.AgentPath,
			Target:   AgentPath,
			ReadOnly: true,
		}},
		Resources: container.Resources{
			Memory:     memory,
			MemorySwap: memory,
			NanoCPUs:   int64(r.CPUs * 1e9),
			PidsLimit:  &pids,
			// The agent applies nofile and fsize itself (wire.Limits); set
			// here too, they bind it from its first instruction.
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: int64(r.NoFile), Hard: int64(r.NoFile)},
				{Name: "fsize", Soft: int64(r.FileSizeMB) << 20, Hard: int64(r.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	return cfg, host
}

// Create makes, attaches and starts a container from t; its agent then
// waits on the attached stdin for the one job.
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	cfg, hostCfg := b.ContainerConfig(t)
	var listener *agentListener
	if dir := b.SocketsDir(); dir != "" {
		l, err := listenForAgent(dir)
		if err != nil {
			b.log.Warn("sandbox will use the attached streams", "err", err)
		} else {
			listener = l
			if testHookListening != nil {
				testHookListening(l)
			}
			hostCfg.Mounts = append(hostCfg.Mounts, l.mount())
			cfg.Env = append(cfg.Env, wire.SocketEnv+"="+SocketDir+"/"+socketName)
		}
	}
	// The create call is not cancelled with ctx: a cancellation while the
	// daemon creates the container would lose its ID and leave it behind.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	created, err := b.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Config: cfg, HostConfig: hostCfg})
	cancel()
	if err != nil {
		if listener != nil {
			listener.close()
		}
		return nil, b.classify(err, t.Image, "creating sandbox container")
	}
	l := &link{b: b, id: created.ID, ended: make(chan struct{}), listener: listener}
	sb := agentconn.New(created.ID, l, b.log)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating sandbox container: %w", err)
	}
	// Attach before start, or the first output could be missed.
	att, err := b.cli.ContainerAttach(ctx, l.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		sb.Close()
		return nil, b.classify(err, t.Image, "attaching to sandbox container")
	}
	l.att = att.HijackedResponse
	frames, demuxed := io.Pipe()
	l.frames = frames
	channel := channelStdio
	if listener != nil {
		channel = channelUnknown
	}
	l.stdout = newStdoutSink(demuxed, channel)
	if _, err := b.cli.ContainerStart(ctx, l.id, client.ContainerStartOptions{}); err != nil {
		sb.Close()
		return nil, b.classify(err, t.Image, "starting sandbox container")
	}
	if listener != nil {
		go func() {
			if c, err := listener.accept(); err == nil {
				l.stdout.connected(c)
			}
		}()
		go func() {
			// Once the channel is settled the socket goes (accept closed
			// it already if the agent connected): an agent that fell back to
			// the streams leaves it unused, and nothing the program does
			// later may connect to it. A sandbox that ended first will not
			// connect now.
			select {
			case <-l.stdout.chosen:
			case <-l.ended:
			}
			listener.close()
		}()
	}
	go func() {
		_, err := stdcopy.StdCopy(l.stdout, &l.diag, att.Reader)
		demuxed.CloseWithError(err)
		close(l.ended)
	}()
	return sb, nil
}

// link is one started container, and its agent's stream: the agent's
// socket connection, or (when the agent could not connect) the attached
// standard streams. It is the container's agentconn.Link.
type link struct {
	b        *Backend
	id       string
	att      client.HijackedResponse
	listener *agentListener // nil without a socket
	stdout   *stdoutSink    // settles the channel: the socket or the streams
	frames   *io.PipeReader // the agent's frames when it serves on the streams
	diag     agentconn.Diagnostics
	ended    chan struct{} // closed when the attached stream ends
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string { return l.diag.String() }

// Stream waits until the channel is settled: by the time a pool sandbox is
// handed out it is, but a cold one's agent may still be booting. A sandbox
// that ended, or a caller that went away, meanwhile gets the attached
// streams, which then end at once.
func (l *link) Stream(ctx context.Context) (agentconn.Stream, error) {
	select {
	case <-l.stdout.chosen:
	case <-l.ended:
	case <-ctx.Done():
	}
	if conn := l.stdout.socket(); conn != nil {
		return agentconn.Stream{Reader: conn, Writer: conn, CloseWrite: conn.CloseWrite}, nil
	}
	return agentconn.Stream{Reader: l.frames, Writer: l.att.Conn, CloseWrite: l.att.CloseWrite}, nil
}

// Kill stops the container and closes both channels, which ends a read of
// the agent's frames.
func (l *link) Kill(ctx context.Context) {
	_, _ = l.b.cli.ContainerKill(ctx, l.id, client.ContainerKillOptions{Signal: "KILL"})
	l.att.Close()
	if c := l.stdout.socket(); c != nil {
		c.Close()
	}
}

func (l *link) OOMKilled(ctx context.Context) bool { return l.b.oomKilled(ctx, l.id) }

// Close removes the container with a fresh context: the run's own may be
// cancelled already (client gone, timeout), and the container must go
// regardless.
func (l *link) Close() {
	if l.att.Conn != nil {
		l.att.Close()
	}
	if l.listener != nil {
		l.listener.close()
	}
	if l.stdout != nil {
		if c := l.stdout.socket(); c != nil {
			c.Close()
		}
	}
	l.b.remove(l.id)
}

// oomKilled waits briefly for the container to stop and reports whether the
// daemon saw it hit its memory limit.
func (b *Backend) oomKilled(ctx context.Context, id string) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	w := b.cli.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		b.log.Debug("waiting for the sandbox to stop", "id", id, "err", err) // the inspect below tells the state
	}
	ins, err := b.cli.ContainerInspect(wctx, id, client.ContainerInspectOptions{})
	if err != nil || ins.Container.State == nil {
		return false
	}
	return ins.Container.State.OOMKilled
}

func (b *Backend) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for attempt := range 3 {
		_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		b.log.Warn("removing sandbox container", "container", id[:12], "attempt", attempt+1, "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	// The periodic sweep removes it once its expiry passes.
}

// unavailable is the ErrUnavailable of a daemon that could not be reached
// while doing what, with what to do about it.
func (b *Backend) unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %v; %s", sandbox.ErrUnavailable, what, err, startDaemonHint)
}

func (b *Backend) classify(err error, image, what string) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: image %s is not present (%v)", sandbox.ErrImageMissing, image, err)
	case client.IsErrConnectionFailed(err):
		return b.unavailable(what, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}
