// Package docker is the Docker sandbox backend: every run gets a new
// container, hardened by default, driven through the attached stream by the
// in-container agent, and removed afterwards whatever happens.
package docker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
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

// Paths and identities inside every sandbox.
const (
	AgentPath     = "/opt/mcp-code-runner/agent"
	WorkspacePath = "/workspace"
	SandboxUser   = "10001:10001"
)

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
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
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
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	default:
		return fmt.Errorf("inspecting image %s: %w", image, err)
	}
}

// ImageLabels returns the labels of image.
func (b *Backend) ImageLabels(ctx context.Context, image string) (map[string]string, error) {
	ins, err := b.cli.ImageInspect(ctx, image)
	if err != nil {
		return nil, b.classify(err, image, "inspecting image")
	}
	if ins.Config == nil {
		return map[string]string{}, nil
	}
	return ins.Config.Labels, nil
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
		User:            SandboxUser,
		WorkingDir:      WorkspacePath,
		Env:             []string{agent.SandboxEnv + "=1", "HOME=/tmp", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
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
			"/tmp":        fmt.Sprintf("rw,nosuid,nodev,size=%dm,nr_inodes=%d,mode=1777", r.TmpMB, tmpfsInodes),
			WorkspacePath: fmt.Sprintf("rw,nosuid,nodev,exec,size=%dm,nr_inodes=%d,uid=10001,gid=10001,mode=0755", r.WorkspaceMB, tmpfsInodes),
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
			Ulimits: []*container.Ulimit{
				{Name: "nofile", Soft: int64(r.NoFile), Hard: int64(r.NoFile)},
				{Name: "fsize", Soft: int64(r.FileSizeMB) << 20, Hard: int64(r.FileSizeMB) << 20},
				{Name: "core", Soft: 0, Hard: 0},
			},
		},
	}
	// What the agent starts before the job (warm sandboxes only).
	if t.Prestart != nil {
		cfg.Env = append(cfg.Env, jsonEnv(agent.PrestartEnv, t.Prestart))
	}
	if t.Warm != nil {
		cfg.Env = append(cfg.Env, jsonEnv(agent.WarmEnv, t.Warm))
	}
	return cfg, host
}

// jsonEnv is the environment entry name=JSON of v.
func jsonEnv(name string, v any) string {
	spec, _ := json.Marshal(v) // plain structs of strings: cannot fail
	return name + "=" + string(spec)
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
			cfg.Env = append(cfg.Env, agent.SocketEnv+"="+SocketDir+"/"+socketName)
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
	sb := &dockerSandbox{b: b, id: created.ID, dead: make(chan struct{}), listener: listener}
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating sandbox container: %w", err)
	}
	// Attach before start, or the first output could be missed.
	att, err := b.cli.ContainerAttach(ctx, sb.id, client.ContainerAttachOptions{Stream: true, Stdin: true, Stdout: true, Stderr: true})
	if err != nil {
		sb.Close()
		return nil, b.classify(err, t.Image, "attaching to sandbox container")
	}
	sb.att = att.HijackedResponse
	frames, demuxed := io.Pipe()
	sb.frames = frames
	sb.diag = &cappedBuffer{limit: 64 << 10}
	channel := channelStdio
	if listener != nil {
		channel = channelUnknown
	}
	sb.stdout = newStdoutSink(demuxed, channel)
	if _, err := b.cli.ContainerStart(ctx, sb.id, client.ContainerStartOptions{}); err != nil {
		sb.Close()
		return nil, b.classify(err, t.Image, "starting sandbox container")
	}
	if listener != nil {
		go func() {
			if c, err := listener.accept(); err == nil {
				sb.stdout.connected(c)
			}
		}()
		go func() {
			// Once the channel is settled the socket goes (accept closed
			// it already if the agent connected): an agent that fell back to
			// the streams leaves it unused, and nothing the program does
			// later may connect to it. A sandbox that ended first will not
			// connect now.
			select {
			case <-sb.stdout.chosen:
			case <-sb.dead:
			}
			listener.close()
		}()
	}
	go func() {
		_, err := stdcopy.StdCopy(sb.stdout, sb.diag, att.Reader)
		demuxed.CloseWithError(err)
		close(sb.dead)
	}()
	return sb, nil
}

// dockerSandbox is one started container.
type dockerSandbox struct {
	b        *Backend
	id       string
	att      client.HijackedResponse
	listener *agentListener // nil without a socket
	stdout   *stdoutSink    // settles the channel: the socket or the streams
	frames   *io.PipeReader // the agent's frames when it serves on the streams
	diag     *cappedBuffer
	dead     chan struct{} // closed when the attached stream ends
	used     atomic.Bool
	closed   sync.Once
	writeMu  sync.Mutex // one frame at a time on the attached stdin
}

func (s *dockerSandbox) ID() string { return s.id }

func (s *dockerSandbox) Gone() <-chan struct{} { return s.dead }

func (s *dockerSandbox) Dead() <-chan struct{} {
	if s.used.Load() {
		return nil // ending after its job is not dying while idle
	}
	return s.dead
}

// Close removes the container with a fresh context: the run's own may be
// cancelled already (client gone, timeout), and the container must go
// regardless.
func (s *dockerSandbox) Close() {
	s.closed.Do(func() {
		if s.att.Conn != nil {
			s.att.Close()
		}
		if s.listener != nil {
			s.listener.close()
		}
		if s.stdout != nil {
			if c, _ := s.stdout.socket(); c != nil {
				c.Close()
			}
		}
		s.b.remove(s.id)
	})
}

// Exec sends the job in one frame and reads the agent's frames until Done,
// the deadline, or the caller's context ends.
func (s *dockerSandbox) Exec(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	if !s.used.CompareAndSwap(false, true) {
		return nil, sandbox.ErrUsed
	}
	return s.exchange(ctx, job, onChunk, false)
}

// Call sends one job of a session and reads its answer; the sandbox stays
// for the next. The caller serializes calls. A caller that goes away
// cancels the job inside the sandbox; only the deadline kills the sandbox.
func (s *dockerSandbox) Call(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	s.used.Store(true)
	return s.exchange(ctx, job, onChunk, true)
}

func (s *dockerSandbox) exchange(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk), session bool) (*sandbox.Result, error) {
	select {
	case <-s.dead:
		return nil, fmt.Errorf("%w: %s", sandbox.ErrDead, strings.TrimSpace(s.diag.String()))
	default:
	}
	payload, err := json.Marshal(job.Request)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	if len(payload) > agent.MaxFrameBytes {
		return nil, fmt.Errorf("request of %d bytes is larger than the sandbox accepts (%d)", len(payload), agent.MaxFrameBytes)
	}
	b := s.b
	var killed sync.Once
	res := &sandbox.Result{}
	kill := func(reason string) {
		killed.Do(func() {
			res.Killed = true
			b.log.Debug("killing sandbox", "run", job.RunID, "reason", reason)
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			_, _ = b.cli.ContainerKill(kctx, s.id, client.ContainerKillOptions{Signal: "KILL"})
			s.att.Close()
			if c, _ := s.stdout.socket(); c != nil {
				c.Close()
			}
		})
	}
	deadline := time.AfterFunc(job.Deadline, func() { kill("deadline") })
	defer deadline.Stop()

	// Which channel the agent serves on is settled by the time a pool
	// sandbox is handed out; a cold one's agent may still be booting.
	select {
	case <-s.stdout.chosen:
	case <-s.dead:
	case <-ctx.Done():
	}
	var (
		w          io.Writer = s.att.Conn
		r          io.Reader = s.frames
		closeWrite           = s.att.CloseWrite
	)
	conn, connReader := s.stdout.socket()
	if conn != nil {
		w, r, closeWrite = conn, connReader, conn.CloseWrite
	}
	send := func() error {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		err := agent.WriteFrame(w, agent.Frame{Kind: agent.KindRequest, Payload: payload})
		if err != nil {
			b.log.Debug("sending request to sandbox", "run", job.RunID, "err", err)
		}
		if !session {
			// Closing our write side tells the agent nothing more comes.
			_ = closeWrite()
		}
		return err
	}
	sent := time.Now()
	if len(payload) > inlineRequestBytes {
		go send() // the agent may answer before it has read it all
	} else if err := send(); err != nil && !session && conn != nil {
		// The agent's end of the socket is closed (EPIPE): it died before
		// the job reached it, so nothing ran and another sandbox can take
		// the job. (On the attached streams the daemon takes the bytes
		// whatever the container's state, so there it shows as an
		// incomplete result instead.)
		return nil, fmt.Errorf("%w: sending the job: %v %s", sandbox.ErrDead, err, strings.TrimSpace(s.diag.String()))
	}

	stopWatch := context.AfterFunc(ctx, func() {
		if !session {
			kill("caller went away")
			return
		}
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		_ = agent.WriteFrame(w, agent.Frame{Kind: agent.KindCancel})
	})
	defer stopWatch()

	done := b.readFrames(r, job.Request, res, onChunk)
	res.Elapsed = time.Since(sent)
	killed.Do(func() {}) // settle res.Killed
	res.Diagnostics = s.diag.String()
	if !done {
		res.Incomplete = true
		res.OOMKilled = b.oomKilled(ctx, s.id)
		if !res.Killed && !res.OOMKilled && res.Diagnostics != "" {
			b.log.Warn("sandbox agent ended early", "run", job.RunID, "stderr", res.Diagnostics)
		}
	}
	for _, st := range res.Stages {
		if st.OOMKilled {
			res.OOMKilled = true
		}
	}
	return res, nil
}

// inlineRequestBytes is the largest request written before the answer is
// read rather than beside it: it fits the buffers between here and the
// agent, so writing it cannot wait for the agent to read.
const inlineRequestBytes = 32 << 10

// hostFrameLimit bounds one frame read from a sandbox: the largest
// legitimate one is an artifact of artifacts.max_file_bytes in JSON.
const hostFrameLimit = 24 << 20

// maxListEntries bounds the file entries of one answer (list_files).
const maxListEntries = 10001

// readFrames consumes the agent's frames into res; it reports whether the
// Done frame arrived. Whatever the sandbox sends, what is kept is bounded:
// the agent enforces the output limit, but a hostile program could write
// frames of its own, so the server enforces it again (per stage and stream),
// and bounds stages, file entries and their content.
func (b *Backend) readFrames(r io.Reader, req agent.Request, res *sandbox.Result, onChunk func(sandbox.Chunk)) bool {
	stages := req.Stages
	maxStages := max(len(stages), 1)
	outLimit := req.OutputLimit
	if outLimit <= 0 {
		outLimit = 1 << 20
	}
	dataLimit := int64(64 << 20)
	if req.Artifacts != nil {
		dataLimit = req.Artifacts.MaxTotalBytes
	}
	if req.MaxReadBytes > 0 {
		dataLimit = req.MaxReadBytes
	}
	var dataKept int64
	// A stage's entry exists from its first frame, named after the request,
	// so output of a stage that never reported (killed) is kept.
	stage := func(i uint8) *sandbox.StageOutput {
		for len(res.Stages) <= int(i) {
			st := sandbox.StageOutput{}
			if n := len(res.Stages); n < len(stages) {
				st.Name = stages[n].Name
			}
			res.Stages = append(res.Stages, st)
		}
		return &res.Stages[i]
	}
	keep := func(buf *[]byte, p []byte) []byte {
		room := outLimit - int64(len(*buf))
		if room <= 0 {
			return nil
		}
		if int64(len(p)) > room {
			p = p[:room]
		}
		*buf = append(*buf, p...)
		return p
	}
	for {
		f, err := agent.ReadFrameLimit(r, hostFrameLimit)
		if err != nil {
			return false
		}
		if int(f.Stage) >= maxStages {
			return false // not a frame the agent would send
		}
		switch f.Kind {
		case agent.KindHello:
			// An agent that could not reach its socket says so first.
		case agent.KindStdout, agent.KindStderr:
			st := stage(f.Stage)
			stream := sandbox.Stdout
			var kept []byte
			if f.Kind == agent.KindStdout {
				kept = keep(&st.Stdout, f.Payload)
			} else {
				kept = keep(&st.Stderr, f.Payload)
				stream = sandbox.Stderr
			}
			if onChunk != nil && len(kept) > 0 {
				onChunk(sandbox.Chunk{Stage: int(f.Stage), Stream: stream, Data: kept})
			}
		case agent.KindStage:
			st := stage(f.Stage)
			out, errOut := st.Stdout, st.Stderr
			if err := json.Unmarshal(f.Payload, &st.StageResult); err != nil {
				return false
			}
			st.Stdout, st.Stderr = out, errOut
		case agent.KindArtifact:
			if len(res.Artifacts) >= maxListEntries {
				continue
			}
			var a agent.Artifact
			if err := json.Unmarshal(f.Payload, &a); err != nil {
				return false
			}
			if n := int64(len(a.Data)); n > 0 {
				if dataKept+n > dataLimit {
					a.Data, a.Skipped = nil, "over the size limit of the files returned"
				} else {
					dataKept += n
				}
			}
			res.Artifacts = append(res.Artifacts, a)
		case agent.KindDone:
			var d agent.Done
			if err := json.Unmarshal(f.Payload, &d); err != nil {
				return false
			}
			res.AgentError = d.Error
			return true
		default:
			return false
		}
	}
}

// oomKilled waits briefly for the container to stop and reports whether the
// daemon saw it hit its memory limit.
func (b *Backend) oomKilled(ctx context.Context, id string) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	w := b.cli.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case <-w.Error:
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
	for attempt := 0; attempt < 3; attempt++ {
		_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		b.log.Warn("removing sandbox container", "container", id[:12], "attempt", attempt+1, "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	// The periodic sweep removes it once its expiry passes.
}

func (b *Backend) classify(err error, image, what string) error {
	switch {
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: image %s is not present (%v)", sandbox.ErrImageMissing, image, err)
	case client.IsErrConnectionFailed(err):
		return fmt.Errorf("%w: %s: %v", sandbox.ErrUnavailable, what, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
