package docker

import (
	"context"
	"fmt"
	"io"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Create makes, attaches and starts a container from t; its agent then
// waits on the attached stdin for the one job.
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	rt, err := b.Runtime(ctx)
	if err != nil {
		return nil, err
	}
	if _, err := b.Delivery(ctx); err != nil {
		return nil, err
	}
	if err := b.checkLimits(ctx); err != nil {
		return nil, err
	}
	if t.Isolation.Or() == sandbox.IsolationGVisor {
		if err := b.IsolationSupport(sandbox.IsolationGVisor); err != nil {
			return nil, err
		}
		return b.create(ctx, t, b.gvisorRuntime())
	}
	sb, err := b.create(ctx, t, rt.Name)
	if err != nil && rt.auto && rt.Name != "" && ctx.Err() == nil {
		// A runtime chosen by auto that cannot start a container here (crun
		// on a host whose cgroups it refuses) gives way to the daemon's
		// default, if that one can.
		if fallback, ferr := b.create(ctx, t, ""); ferr == nil {
			b.runtimeFailed(rt, err)
			return fallback, nil
		}
	}
	return sb, err
}

// create is Create under the given runtime ("" for the daemon's default).
func (b *Backend) create(ctx context.Context, t sandbox.Template, runtime string) (sandbox.Sandbox, error) {
	cfg, hostCfg := b.ContainerConfig(t)
	hostCfg.Runtime = runtime
	var egress *sandbox.EgressSocket
	if t.Egress != nil {
		s, err := listenForEgress(b.SocketsDir(), t.Egress)
		if err != nil {
			return nil, err
		}
		egress = s
		hostCfg.Mounts = append(hostCfg.Mounts, egressMount(s))
		cfg.Env = append(cfg.Env, s.Env())
	}
	// Not under gVisor, whose gofer makes every connection to a host socket:
	// the agent's could not be told from another program's (the peer
	// check), so a gVisor sandbox's agent serves the attached streams.
	var listener *agentListener
	if dir := b.SocketsDir(); dir != "" && runtime != b.gvisorRuntime() {
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
			if t.ReattachGrace > 0 {
				l.keepDir = true
				cfg.Env = append(cfg.Env, fmt.Sprintf("%s=%d", wire.ReattachEnv, t.ReattachGrace.Milliseconds()))
			}
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
		egress.Close()
		return nil, b.classify(err, t.Image, "creating sandbox container")
	}
	l := &link{b: b, id: created.ID, ended: make(chan struct{}), listener: listener, egress: egress,
		reattachable: listener != nil && listener.keepDir, gvisor: runtime == b.gvisorRuntime()}
	sb := agentconn.New(created.ID, l, b.log)
	if err := ctx.Err(); err != nil {
		sb.Close()
		return nil, fmt.Errorf("creating sandbox container: %w", err)
	}
	// Attach before start, or the first output could be missed. Podman
	// refuses to attach to a container that has not started (409), so there
	// it attaches just after the start: the agent's frames go over its
	// socket, and only what it writes to its streams before the attach is
	// lost.
	attachFirst := !b.cachedEngine().Podman()
	if !attachFirst {
		if _, err := b.cli.ContainerStart(ctx, l.id, client.ContainerStartOptions{}); err != nil {
			sb.Close()
			return nil, b.classify(err, t.Image, "starting sandbox container")
		}
	}
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
	if attachFirst {
		if _, err := b.cli.ContainerStart(ctx, l.id, client.ContainerStartOptions{}); err != nil {
			sb.Close()
			return nil, b.classify(err, t.Image, "starting sandbox container")
		}
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
