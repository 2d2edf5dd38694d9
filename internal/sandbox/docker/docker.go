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
	"log/slog"
	"os"
	"sync"
	"sync/atomic"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Labels that mark a container as one of ours. LabelInstance is the server
// within its process that the container is made for
// (sandbox.Template.Instance): its shutdown removes its own.
const (
	LabelManaged   = "io.mcp-code-runner.managed"
	LabelOwner     = "io.mcp-code-runner.owner"
	LabelOwnerHost = "io.mcp-code-runner.owner-host"
	LabelOwnerPID  = "io.mcp-code-runner.owner-pid"
	LabelOwnerBoot = "io.mcp-code-runner.owner-start"
	LabelInstance  = "io.mcp-code-runner.instance"
	LabelExpires   = "io.mcp-code-runner.expires"
	LabelPurpose   = "io.mcp-code-runner.purpose"
	// LabelStore names the state store (sandbox.Keep.Store) whose
	// sessions may own a sandbox made with a ReattachGrace.
	LabelStore = "io.mcp-code-runner.store"
)

// AgentPath is where every container sees the agent binary. The workspace
// and the user are the contract's (wire.WorkspacePath, wire.SandboxUser).
const AgentPath = AgentDir + "/agent"

// Options configure the backend.
type Options struct {
	// AgentPath is the static agent binary on the daemon's host, mounted
	// read-only into every container.
	AgentPath string
	// AgentDelivery is how the agent gets into sandboxes: "" or "auto",
	// "bind" or "volume" (delivery.go).
	AgentDelivery string
	// Runtime is the OCI runtime: "" or "auto" (crun when the daemon has it,
	// else the daemon's default), or a runtime registered with the daemon
	// ("runc", "crun", "runsc").
	Runtime string
	// GVisorRuntime is the name the daemon has gVisor's runsc registered
	// under, for templates of isolation gvisor ("" is "runsc").
	GVisorRuntime string
	// AllowUnenforcedLimits lets sandboxes run on an engine that cannot set
	// their memory, pids or CPU limits (dockerengine.Engine.Unenforced); without it such
	// an engine is refused.
	AllowUnenforcedLimits bool
	// Logger receives the backend's logs.
	Logger *slog.Logger
}

// Backend runs sandboxes as Docker containers.
type Backend struct {
	cli   *client.Client
	opts  Options
	owner sandbox.Owner
	log   *slog.Logger
	// useSockets says whether agents are given sockets (socket.go); their
	// directory is made when the first sandbox needs it, so that a backend
	// that never creates one (doctor, tests) leaves nothing behind.
	useSockets  atomic.Bool
	socketsOnce sync.Once
	sockets     string // "" until made, or if it could not be
	// keep is what the sweep keeps of stopped servers' sandboxes (SetKeep).
	keep sandbox.Keep
	// adoptedIDs are the containers of other servers this one re-attached to.
	adoptedIDs sync.Map
	// runtime is the chosen runtime once the daemon has answered (runtime.go).
	runtimeMu sync.Mutex
	runtime   *RuntimeChoice
	// delivery is how sandboxes get the agent once decided (delivery.go).
	deliveryMu sync.Mutex
	delivery   *Delivery
	// info is the daemon's first answer to Info, which the runtime choice
	// and the agent delivery both read: one call, tens of milliseconds.
	infoMu sync.Mutex
	info   *client.SystemInfoResult
	engine *dockerengine.Engine // what the engine is, once asked (engine.go)
	// unenforcedWarning logs once that limits are off (checkLimits).
	unenforcedWarning sync.Once
}

// daemonInfo returns the daemon's system information, asked once.
func (b *Backend) daemonInfo(ctx context.Context) (client.SystemInfoResult, error) {
	b.infoMu.Lock()
	defer b.infoMu.Unlock()
	if b.info != nil {
		return *b.info, nil
	}
	info, err := b.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return info, err
	}
	b.info = &info
	return info, nil
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
	if !ValidDelivery(opts.AgentDelivery) {
		return nil, fmt.Errorf("docker backend: agent delivery %q: want auto, bind or volume", opts.AgentDelivery)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	b := &Backend{cli: cli, opts: opts, owner: sandbox.CurrentOwner(), log: log}
	b.useSockets.Store(socketsUsable(cli.DaemonHost(), opts.Runtime))
	return b, nil
}

// Client returns the Docker client the backend uses.
func (b *Backend) Client() *client.Client { return b.cli }

// AgentPath returns the agent binary sandboxes get (bind-mounted, or
// copied into the agent volume).
// It is another binary than Options.AgentPath when that one was built for
// another platform than the daemon's and the backend built one (delivery.go).
func (b *Backend) AgentPath() string {
	b.deliveryMu.Lock()
	defer b.deliveryMu.Unlock()
	return b.opts.AgentPath
}

// UsesSockets reports whether agents are given sockets to connect to; it
// turns false when Delivery finds that the daemon cannot see them.
func (b *Backend) UsesSockets() bool { return b.useSockets.Load() }

// SocketsDir is the directory of the sockets agents connect to, made on
// first use; "" when sandboxes use the attached streams only.
func (b *Backend) SocketsDir() string {
	if !b.useSockets.Load() {
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

// Check pings the daemon and checks that it has the configured runtime.
func (b *Backend) Check(ctx context.Context) error {
	if err := dockerengine.Ping(ctx, b.cli); err != nil {
		return fmt.Errorf("%w: %w", sandbox.ErrUnavailable, err) // dockerengine.Ping says what to do
	}
	if err := b.checkRuntime(ctx); err != nil {
		return err
	}
	if err := b.checkLimits(ctx); err != nil {
		return err
	}
	if _, err := b.Delivery(ctx); err != nil && !errors.Is(err, sandbox.ErrUnavailable) {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	} else if err != nil {
		return err
	}
	return nil
}

// Architecture is the daemon's architecture, which its sandboxes have, or ""
// when the daemon does not answer.
func (b *Backend) Architecture(ctx context.Context) string {
	info, err := b.daemonInfo(ctx)
	if err != nil {
		return ""
	}
	return dockerengine.GoArch(info.Info.Architecture)
}

// CheckImage reports whether image is present locally, and built for the
// daemon's platform: an image of another architecture would start and fail
// at its first instruction, in every sandbox of its pool.
func (b *Backend) CheckImage(ctx context.Context, image string) error {
	img, err := b.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
		info, ierr := b.daemonInfo(ctx)
		if ierr != nil {
			return nil // the platform is unknown; the runs will tell
		}
		return imagePlatformMismatch(image, img.Os, img.Architecture, info.Info.OSType, info.Info.Architecture)
	case cerrdefs.IsNotFound(err):
		return fmt.Errorf("%w: image %s is not present", sandbox.ErrImageMissing, image)
	case client.IsErrConnectionFailed(err):
		return b.unavailable("inspecting image "+image, err)
	default:
		return fmt.Errorf("inspecting image %s: %w", image, err)
	}
}

// ErrImagePlatform marks a runtime image built for another platform than
// the daemon's (with [sandbox.ErrImageMissing]: it must be built again).
var ErrImagePlatform = errors.New("built for another platform")

// imagePlatformMismatch is the ErrImageMissing of an image built for
// another platform than the daemon's, or nil when they agree (or the image
// does not say).
func imagePlatformMismatch(image, imageOS, imageArch, daemonOS, daemonArch string) error {
	if imageArch == "" || daemonArch == "" {
		return nil
	}
	if dockerengine.GoArch(imageArch) == dockerengine.GoArch(daemonArch) && (imageOS == "" || daemonOS == "" || imageOS == daemonOS) {
		return nil
	}
	return fmt.Errorf("%w (%w): image %s is built for %s/%s, but the daemon runs %s/%s, so its programs cannot start; rebuild it on this daemon",
		sandbox.ErrImageMissing, ErrImagePlatform, image, imageOS, dockerengine.GoArch(imageArch), daemonOS, dockerengine.GoArch(daemonArch))
}

// unavailable is the ErrUnavailable of a daemon that could not be reached
// while doing what, with what to do about it.
func (b *Backend) unavailable(what string, err error) error {
	return fmt.Errorf("%w: %s: %v; %s", sandbox.ErrUnavailable, what, err, dockerengine.StartDaemonHint)
}
