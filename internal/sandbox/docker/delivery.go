package docker

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
)

// How the agent binary gets into sandboxes (Options.AgentDelivery).
//
// bind mounts the agent file from the daemon's file system: it works only
// when the daemon sees this server's files at the same paths (a rootful
// daemon on this machine, or shared_dir). volume copies the agent once into
// a named volume, mcr-agent-<sha256 prefix of its content>, which sandboxes
// mount read-only; the bytes travel through the Docker API, so it works
// with a daemon in a VM (Docker Desktop), on another machine (DOCKER_HOST
// tcp:// or ssh://) or in another mount namespace. auto asks the daemon
// once whether it sees the agent file (and the directory the agents'
// sockets go in) with the same content, and binds when it does.
const (
	DeliveryAuto   = "auto"
	DeliveryBind   = "bind"
	DeliveryVolume = "volume"
)

// AgentDir is the directory a sandbox sees the agent in: the agent volume's
// mount point.
const AgentDir = "/opt/mcp-code-runner"

// LabelAgent marks the agent's volume and image with the SHA-256 of the
// agent binary they hold.
const LabelAgent = "io.mcp-code-runner.agent-sha256"

// agentVolumePrefix starts the name of an agent volume; the first 16 hex
// digits of the agent's SHA-256 follow.
const agentVolumePrefix = "mcr-agent-"

// agentImageRepo is the repository of the agent image: the agent alone, at
// AgentPath, in an image made from nothing (FROM scratch, imported through
// the API). It fills the agent volume, and gives the probes an image to
// create containers from.
const agentImageRepo = "mcp-code-runner/agent"

// Delivery is how sandboxes get the agent and reach it, and why.
type Delivery struct {
	// Mode is DeliveryBind or DeliveryVolume.
	Mode string
	// Volume is the agent volume's name when Mode is DeliveryVolume.
	Volume string
	// Sockets says whether agents are given sockets (else they use the
	// attached streams).
	Sockets bool
	// Reason says how Mode and Sockets were chosen, for logs and doctor.
	Reason string
	// Platform is the daemon's, as os/architecture.
	Platform string
}

// ErrAgentPlatform is an agent binary that cannot run on the daemon's
// platform.
var ErrAgentPlatform = errors.New("the agent binary does not match the Docker daemon's platform")

// ValidDelivery reports whether mode is a delivery Options accept.
func ValidDelivery(mode string) bool {
	switch mode {
	case "", DeliveryAuto, DeliveryBind, DeliveryVolume:
		return true
	}
	return false
}

// Delivery decides how sandboxes get the agent the first time the daemon
// answers, and returns that decision from then on.
func (b *Backend) Delivery(ctx context.Context) (Delivery, error) {
	b.deliveryMu.Lock()
	defer b.deliveryMu.Unlock()
	if b.delivery != nil {
		return *b.delivery, nil
	}
	start := time.Now()
	d, err := b.decideDelivery(ctx)
	if err != nil {
		return d, err
	}
	b.delivery = &d
	if !d.Sockets {
		b.useSockets.Store(false)
	}
	b.log.Info("agent delivery", "mode", d.Mode, "volume", d.Volume, "sockets", d.Sockets, "reason", d.Reason, "took", time.Since(start).Round(time.Millisecond))
	return d, nil
}

// cachedDelivery is the decision if made, else a bind mount (what
// ContainerConfig shows before any sandbox is created).
func (b *Backend) cachedDelivery() Delivery {
	b.deliveryMu.Lock()
	defer b.deliveryMu.Unlock()
	if b.delivery != nil {
		return *b.delivery
	}
	return Delivery{Mode: DeliveryBind}
}

func (b *Backend) decideDelivery(ctx context.Context) (Delivery, error) {
	info, err := b.daemonInfo(ctx)
	if err != nil {
		if client.IsErrConnectionFailed(err) {
			return Delivery{}, b.unavailable("asking the daemon for its platform", err)
		}
		return Delivery{}, fmt.Errorf("asking the Docker daemon for its platform: %w", err)
	}
	d := Delivery{Platform: info.Info.OSType + "/" + dockerengine.GoArch(info.Info.Architecture)}
	if err := checkPlatform(b.opts.AgentPath, info.Info.OSType, info.Info.Architecture); err != nil {
		if info.Info.OSType != "linux" {
			return d, err
		}
		// The go command and this module's source can build one.
		built, berr := crossBuildAgent(ctx, dockerengine.GoArch(info.Info.Architecture))
		if berr != nil {
			return d, fmt.Errorf("%w (building one here: %v)", err, berr)
		}
		b.log.Info("agent built for the daemon's platform", "platform", d.Platform, "agent", built, "instead_of", b.opts.AgentPath)
		b.opts.AgentPath = built
	}
	mode := b.opts.AgentDelivery
	if mode == "" {
		mode = DeliveryAuto
	}
	wantSockets := b.useSockets.Load()
	// A daemon in this mount namespace sees these files as they are: the
	// kernel says so in microseconds, where asking the daemon costs
	// containers.
	if mode != DeliveryVolume {
		if shares, why := daemonSharesFiles(b.cli.DaemonHost()); shares {
			d.Mode, d.Sockets = DeliveryBind, wantSockets
			d.Reason = mode + ": " + why + ", so a bind mount"
			if wantSockets {
				d.Reason += "; sockets: the daemon sees " + os.TempDir()
			} else {
				d.Reason += "; streams: the runtime is gVisor"
			}
			return d, nil
		}
	}
	sum, err := fileSHA256(b.opts.AgentPath)
	if err != nil {
		return d, fmt.Errorf("reading the agent binary: %w", err)
	}
	// The agent image fills the volume, and gives the probes an image.
	image, err := b.ensureAgentImage(ctx, sum)
	if err != nil {
		return d, err
	}
	// Whether the daemon sees the temporary directory is asked alongside.
	type tempDirAnswer struct {
		why string
		err error
	}
	tempDir := make(chan tempDirAnswer, 1)
	if wantSockets {
		go func() {
			why, err := b.daemonSeesTempDir(ctx, image)
			tempDir <- tempDirAnswer{why, err}
		}()
	}
	var why []string
	switch mode {
	case DeliveryBind:
		seen, err := b.daemonSees(ctx, image, b.opts.AgentPath, sum)
		switch {
		case err != nil:
			return d, err
		case seen != "":
			return d, fmt.Errorf("agent_delivery is bind, but %s: set agent_delivery (MCR_AGENT_DELIVERY) to auto or volume, or give the daemon this file at the same path (shared_dir)", seen)
		}
		d.Mode = DeliveryBind
		why = append(why, "bind: configured, and the daemon sees the agent file with the same content")
	case DeliveryVolume:
		d.Mode = DeliveryVolume
		why = append(why, "volume: configured")
	default:
		seen, err := b.daemonSees(ctx, image, b.opts.AgentPath, sum)
		switch {
		case err != nil:
			return d, err
		case seen == "":
			d.Mode = DeliveryBind
			why = append(why, "auto: the daemon sees the agent file "+b.opts.AgentPath+" with the same content, so a bind mount")
		default:
			d.Mode = DeliveryVolume
			why = append(why, "auto: "+seen+", so a volume")
		}
	}
	if d.Mode == DeliveryVolume {
		if d.Volume, err = b.ensureAgentVolume(ctx, image, sum); err != nil {
			return d, err
		}
	}
	if wantSockets {
		a := <-tempDir
		if a.err != nil {
			return d, a.err
		}
		if a.why == "" {
			d.Sockets = true
			why = append(why, "sockets: the daemon sees "+os.TempDir())
		} else {
			why = append(why, "streams: "+a.why+b.rootlessSocketsHint())
		}
	} else {
		why = append(why, "streams: the daemon is not on a local Unix socket, or the runtime is gVisor")
	}
	d.Reason = strings.Join(why, "; ")
	return d, nil
}

// agentMount is the mount that shows the agent to a sandbox.
func (b *Backend) agentMount() mount.Mount {
	if d := b.cachedDelivery(); d.Mode == DeliveryVolume {
		return mount.Mount{Type: mount.TypeVolume, Source: d.Volume, Target: AgentDir, ReadOnly: true,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}}
	}
	return mount.Mount{Type: mount.TypeBind, Source: b.AgentPath(), Target: AgentPath, ReadOnly: true}
}

// rootlessSocketsHint names the usual cause when a rootless engine cannot
// reach the agents' sockets: it runs as another user, who may not enter
// this process's private socket directory. Sockets, and with them the
// network tiers, then need the server run as the engine's user.
func (b *Backend) rootlessSocketsHint() string {
	if !b.cachedEngine().Rootless {
		return ""
	}
	uid, other := daemonUser(b.cli.DaemonHost())
	if !other {
		return ""
	}
	return fmt.Sprintf(" (the rootless engine runs as uid %d and cannot enter this process's private directory; run the server as that user for agent sockets and network tiers)", uid)
}
