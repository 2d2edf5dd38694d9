//go:build linux

package crun

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// DefaultStateDir holds the backend's bundles, image roots and crun's own
// state; it is on /run, so a reboot leaves none of it.
const DefaultStateDir = "/run/mcp-code-runner-crun"

// expiryMargin is added to a sandbox's life for its expiry: a sandbox past
// it is removed by any server's sweep.
const expiryMargin = 2 * time.Minute

// Backend runs sandboxes as containers it starts with crun.
type Backend struct {
	cli  *client.Client
	opts Options
	crun string
	// sealedCrun is crun as a sealed copy that crun does not copy again
	// (sealed.go); nil where it could not be made.
	sealedCrun *sealedBinary
	owner      sandbox.Owner // this process, in every sandbox's ID (Owner.NameFields)
	log        *slog.Logger
	roots      *imageRoots
	// prepareMu guards hosts, the /etc/hosts every sandbox sees, set once
	// the state directories exist: by Check, or by the first Creates of a
	// backend that was not checked, which may run side by side.
	prepareMu sync.Mutex
	hosts     string
	// seccompBPF is Docker's default profile as crun compiled it for the
	// first sandbox (base64), given to the later ones ready-made.
	seccompMu  sync.Mutex
	seccompBPF string
	// cgroupV2 says whether the host's cgroups are the unified hierarchy,
	// which decides where a sandbox's OOM kills are counted.
	cgroupV2 bool
	// keep is what the sweep keeps of stopped servers' sandboxes (SetKeep).
	keep sandbox.Keep
	// adoptedIDs are the sandboxes of other servers this one re-attached to.
	adoptedIDs sync.Map
	// tools are the crun and criu of checkpoints.
	tools checkpointTools
	// runsc is whether gVisor's runtime answers (gvisor.go).
	runsc runscCheck
	// maskState holds the mounts that stand in for a checkpointable
	// sandbox's tmpfs mounts (masks.go).
	maskState masksState
}

var _ sandbox.Backend = (*Backend)(nil)

// backendSeq tells apart the backends of one process in their image roots'
// directory, so that one's Close never unmounts another's.
var (
	backendSeqMu sync.Mutex
	backendSeq   int
)

// New returns a backend that takes its images from the Docker daemon cli
// talks to.
func New(cli *client.Client, opts Options) (*Backend, error) {
	if opts.AgentPath == "" {
		return nil, errors.New("crun backend: the agent path is required")
	}
	if _, err := os.Stat(opts.AgentPath); err != nil {
		return nil, fmt.Errorf("crun backend: agent binary: %w (build it with `make build`)", err)
	}
	if opts.StateDir == "" {
		opts.StateDir = DefaultStateDir
	}
	bin := opts.Binary
	if bin == "" {
		bin = "crun"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		return nil, fmt.Errorf("%w: crun backend: %s not found (%v): install it (`apt-get install crun`, or `make docker`, which does) or use the docker backend",
			sandbox.ErrUnavailable, bin, err)
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	owner := sandbox.CurrentOwner()
	backendSeqMu.Lock()
	backendSeq++
	seq := backendSeq
	backendSeqMu.Unlock()
	b := &Backend{cli: cli, opts: opts, crun: path, owner: owner, log: log}
	if b.sealedCrun, err = sealAndTry(path); err != nil {
		log.Warn("crun copies itself at every command", "err", err)
	}
	b.tools.dir = opts.CheckpointTools
	if b.tools.dir == "" {
		b.tools.dir = DefaultCheckpointTools
	}
	b.roots = newImageRoots(filepath.Join(opts.StateDir, "rootfs", owner.NameFields()+"-"+strconv.Itoa(seq)))
	_, err = os.Stat("/sys/fs/cgroup/cgroup.controllers")
	b.cgroupV2 = err == nil
	return b, nil
}

// Binary is the crun executable the backend runs.
func (b *Backend) Binary() string { return b.crun }

// Version is crun's version ("crun 1.21"), or why it is unknown.
func (b *Backend) Version() string {
	out, err := exec.Command(b.crun, "--version").Output() // our own binary
	if err != nil {
		return fmt.Sprintf("crun of unknown version (%v)", err)
	}
	first, _, _ := strings.Cut(string(out), "\n")
	return strings.Replace(strings.TrimSpace(first), " version ", " ", 1)
}

// Client returns the Docker client the backend takes its images from.
func (b *Backend) Client() *client.Client { return b.cli }

func (b *Backend) bundlesDir() string { return filepath.Join(b.opts.StateDir, "bundles") }
func (b *Backend) crunRoot() string   { return filepath.Join(b.opts.StateDir, "crun") }

// Check reports whether sandboxes can run: crun is there, the server may
// mount and make cgroups, and the image daemon answers with overlay2.
func (b *Backend) Check(ctx context.Context) error {
	if os.Geteuid() != 0 {
		return fmt.Errorf("%w: the crun backend needs root (it mounts the images' roots and makes each sandbox's cgroup); run the server as root or use the docker backend", sandbox.ErrUnavailable)
	}
	if err := dockerengine.Ping(ctx, b.cli); err != nil {
		return fmt.Errorf("%w: the crun backend takes its images from Docker: %w", sandbox.ErrUnavailable, err)
	}
	info, err := b.cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return fmt.Errorf("%w: asking the Docker daemon for its storage driver: %v", sandbox.ErrUnavailable, err)
	}
	if d := info.Info.Driver; d != "overlay2" {
		return fmt.Errorf("%w: the crun backend reads images from Docker's overlay2 storage, but the daemon uses %q; use the docker backend", sandbox.ErrUnavailable, d)
	}
	if slices.ContainsFunc(info.Info.SecurityOptions, func(o string) bool { return strings.Contains(o, "name=rootless") }) {
		return fmt.Errorf("%w: the Docker daemon runs rootless: its images' files belong to its user's mapped IDs; use the docker backend", sandbox.ErrUnavailable)
	}
	if strings.Contains(info.Info.OperatingSystem, "Docker Desktop") {
		return fmt.Errorf("%w: the Docker daemon is Docker Desktop's, whose images are in its VM, not on this host; use the docker backend", sandbox.ErrUnavailable)
	}
	// The daemon's storage must be this host's: a daemon in a VM, in a
	// container or on another machine reports directories this server
	// cannot mount.
	if fi, err := os.Stat(filepath.Join(info.Info.DockerRootDir, "overlay2")); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the Docker daemon's storage (%s/overlay2) is not on this host's file system (a daemon in a VM, a container or on another machine); use the docker backend", sandbox.ErrUnavailable, info.Info.DockerRootDir)
	}
	if _, err := b.prepared(); err != nil {
		return fmt.Errorf("%w: %v", sandbox.ErrUnavailable, err)
	}
	return nil
}

// prepared makes the state directories and the shared /etc/hosts, once
// (again after a failure), and returns the hosts file; first it has the
// host's cgroups favor changes, if the options say so (favordynmods.go).
func (b *Backend) prepared() (string, error) {
	b.prepareMu.Lock()
	defer b.prepareMu.Unlock()
	if b.hosts != "" {
		return b.hosts, nil
	}
	for _, dir := range []string{b.bundlesDir(), b.crunRoot(), b.runscRoot()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return "", fmt.Errorf("crun backend state directory: %w", err)
		}
	}
	if b.opts.FavorCgroupChanges {
		switch changed, err := favorCgroupChanges(); {
		case err != nil:
			b.log.Warn("the host's cgroups keep their default lock mode: a sandbox's start or restore after a quiet moment waits for an RCU grace period (5-20 ms)", "err", err)
		case changed:
			b.log.Info("the host's cgroups now favor changes (cgroup v2's favordynmods, favor_cgroup_changes): a sandbox's process moves into its cgroup without waiting for an RCU grace period")
		}
	}
	hosts := filepath.Join(b.opts.StateDir, "hosts")
	if _, err := os.Stat(hosts); err != nil {
		tmp := hosts + ".tmp" + strconv.Itoa(os.Getpid())
		content := "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
		if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil { // read by the sandboxes' user
			return "", fmt.Errorf("crun backend hosts file: %w", err)
		}
		if err := os.Rename(tmp, hosts); err != nil {
			return "", fmt.Errorf("crun backend hosts file: %w", err)
		}
	}
	b.hosts = hosts
	return hosts, nil
}

// CheckImage reports whether image is present in the Docker daemon and
// stored where this backend can read it.
func (b *Backend) CheckImage(ctx context.Context, image string) error {
	_, err := b.inspect(ctx, image)
	return err
}

// Architecture is this machine's: crun runs the sandboxes here.
func (b *Backend) Architecture(context.Context) string { return runtime.GOARCH }

// Close unmounts this backend's image roots; sandboxes still running keep
// theirs (the unmount is lazy).
func (b *Backend) Close() error {
	b.unmountNullNetNS()
	return errors.Join(b.roots.close(), b.cli.Close(), b.sealedCrun.close(), b.tools.sealedCrun.close())
}

// newID names a new sandbox after its owner and expiry, so that a sweep
// can tell from the name alone whether it is left behind; the last part
// is random and is also its host name.
func (b *Backend) newID(life time.Duration) (id, hostname string) {
	var r [6]byte
	_, _ = rand.Read(r[:])
	hostname = hex.EncodeToString(r[:])
	expires := time.Now().Add(life + expiryMargin).Unix()
	return fmt.Sprintf("mcr-%s-%d-%s", b.owner.NameFields(), expires, hostname), hostname
}

// sandboxID is a sandbox's name taken apart.
type sandboxID struct {
	pid     string
	start   string
	hostTag string // "" in names made before they carried one
	expires time.Time
}

// parseID takes apart a name newID made ("mcr-<pid>-<start>-<host
// tag>-<expiry>-<host name>", or without the host tag as older servers
// named them); ok is false for any other.
func parseID(id string) (s sandboxID, ok bool) {
	parts := strings.Split(id, "-")
	if (len(parts) != 5 && len(parts) != 6) || parts[0] != "mcr" {
		return s, false
	}
	if _, err := strconv.Atoi(parts[1]); err != nil {
		return s, false
	}
	hostTag := ""
	if len(parts) == 6 {
		hostTag = parts[3]
	}
	exp, err := strconv.ParseInt(parts[len(parts)-2], 10, 64)
	if err != nil {
		return s, false
	}
	return sandboxID{pid: parts[1], start: parts[2], hostTag: hostTag, expires: time.Unix(exp, 0)}, true
}

// Sweep removes the sandboxes, and the image roots, of servers that are
// gone, and sandboxes past their expiry. A sandbox's server is the one
// that last re-attached to it, if any (its owner file); one that a live
// session's record names (SetKeep) is kept though its server is gone,
// since the next server re-attaches to it.
func (b *Backend) Sweep(ctx context.Context) (int, error) {
	keep, keepErr := b.kept(ctx)
	if keepErr != nil {
		b.log.Warn("the sweep keeps every crun sandbox of a stopped server this time: which of them live sessions own is unknown", "err", keepErr)
	}
	removed, err := b.removeWhere(ctx, func(id string, s sandboxID) bool {
		if time.Now().After(s.expires) {
			return true
		}
		if _, ok := b.adoptedIDs.Load(id); ok || keepErr != nil || keep[id] {
			return false
		}
		if b.owner.AliveNamed(b.ownerOf(id, s)) {
			return false
		}
		return !b.otherStores(id) // a session of a store not ours may own it: a server on that store re-attaches to it
	})
	sweepRoots(filepath.Join(b.opts.StateDir, "rootfs"), b.owner, b.log)
	return removed, err
}

// RemoveOwn removes every sandbox this process made (or restored) for
// instance.
func (b *Backend) RemoveOwn(ctx context.Context, instance string) (int, error) {
	return b.removeWhere(ctx, func(id string, s sandboxID) bool {
		pid, start, hostTag := b.ownerOf(id, s)
		return pid+"-"+start+"-"+hostTag == b.owner.NameFields() && b.instanceOf(id) == instance
	})
}

// instanceFile, in a sandbox's bundle, names the server within its process
// that the sandbox was made for (sandbox.Template.Instance): a sandbox's
// name has no room for it. storeFile names the state store whose sessions
// may own a sandbox made with a ReattachGrace (sandbox.Keep.Store).
const (
	instanceFile = "instance"
	storeFile    = "store"
)

// recordServer writes into a new sandbox's bundle the server it is made
// for and, for a session's, the store whose sessions may own it.
func (b *Backend) recordServer(bundle string, t sandbox.Template) error {
	err := os.WriteFile(filepath.Join(bundle, instanceFile), []byte(t.Instance), 0o600)
	if err == nil && t.ReattachGrace > 0 && b.keep.Store != "" {
		err = os.WriteFile(filepath.Join(bundle, storeFile), []byte(b.keep.Store), 0o600)
	}
	if err != nil {
		return fmt.Errorf("crun sandbox bundle: %w", err)
	}
	return nil
}

// otherStores says whether sandbox id is a session's that a live session
// recorded in another state store may own: its bundle names that store,
// and it still runs (its agent waits for a server to re-attach to it;
// once it has given up, nobody can).
func (b *Backend) otherStores(id string) bool {
	data, _ := os.ReadFile(filepath.Join(b.bundlesDir(), id, storeFile)) // in our bundle
	if store := string(data); store == "" || store == b.keep.Store {
		return false
	}
	st, err := b.state(id)
	return err == nil && st.Status == "running"
}

// instanceOf is the instance sandbox id was made for, as its bundle
// records it ("" when it records none).
func (b *Backend) instanceOf(id string) string {
	data, _ := os.ReadFile(filepath.Join(b.bundlesDir(), id, instanceFile)) // in our bundle
	return string(data)
}

// removeWhere removes every sandbox in the bundles directory that match
// selects.
func (b *Backend) removeWhere(ctx context.Context, match func(string, sandboxID) bool) (int, error) {
	entries, err := os.ReadDir(b.bundlesDir())
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("listing crun sandboxes: %w", err)
	}
	removed := 0
	for _, e := range entries {
		if ctx.Err() != nil {
			return removed, ctx.Err()
		}
		s, ok := parseID(e.Name())
		if !ok || !match(e.Name(), s) {
			continue
		}
		b.destroy(e.Name())
		b.disown(e.Name())
		removed++
	}
	return removed, nil
}

// destroy removes a sandbox's container (killing what still runs in it),
// its cgroup, its egress and agent sockets' directories and its bundle.
func (b *Backend) destroy(id string) {
	rt := b.runtimeOf(id)
	for attempt := range 3 {
		out, err := rt.command(context.Background(), "", "delete", "--force", id).CombinedOutput()
		if err == nil || strings.Contains(string(out), "does not exist") || strings.Contains(string(out), "No such file") {
			break
		}
		b.log.Warn("removing crun sandbox", "id", id, "runtime", rt.name(), "attempt", attempt+1, "err", err, "output", strings.TrimSpace(string(out)))
		time.Sleep(100 * time.Millisecond)
	}
	b.removeDirs(id)
}

// removeDirs removes sandbox id's directories on the host: its egress
// proxy's, its agent's socket's and log's, and its bundle.
func (b *Backend) removeDirs(id string) {
	_ = os.RemoveAll(egressDir(id))
	_ = os.RemoveAll(agentDir(id))
	if err := unix.Unmount(agentLogDir(id), unix.MNT_DETACH); err == nil || errors.Is(err, unix.EINVAL) {
		_ = os.RemoveAll(agentLogDir(id)) // not through a tmpfs still mounted
	}
	_ = os.RemoveAll(filepath.Join(b.bundlesDir(), id))
}

// inspect returns image's root for sandboxes, mounting it when this
// backend has not yet.
func (b *Backend) inspect(ctx context.Context, image string) (*imageRoot, error) {
	img, err := b.cli.ImageInspect(ctx, image)
	switch {
	case err == nil:
	case cerrdefs.IsNotFound(err):
		return nil, fmt.Errorf("%w: image %s is not present", sandbox.ErrImageMissing, image)
	case client.IsErrConnectionFailed(err):
		return nil, fmt.Errorf("%w: inspecting image %s: %v", sandbox.ErrUnavailable, image, err)
	default:
		return nil, fmt.Errorf("inspecting image %s: %w", image, err)
	}
	if img.GraphDriver == nil || img.GraphDriver.Name != "overlay2" {
		return nil, fmt.Errorf("%w: image %s is not stored by overlay2, which the crun backend reads; use the docker backend", sandbox.ErrUnavailable, image)
	}
	var env []string
	if img.Config != nil {
		env = img.Config.Env
	}
	return b.roots.get(img.ID, layersOf(img.GraphDriver.Data), env)
}

// layersOf lists an overlay2 image's layer directories, top first.
func layersOf(data map[string]string) []string {
	var layers []string
	if up := data["UpperDir"]; up != "" {
		layers = append(layers, up)
	}
	if low := data["LowerDir"]; low != "" {
		layers = append(layers, strings.Split(low, ":")...)
	}
	return layers
}
