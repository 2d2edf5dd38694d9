package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"debug/elf"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
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
	d := Delivery{Platform: info.Info.OSType + "/" + GoArch(info.Info.Architecture)}
	if err := checkPlatform(b.opts.AgentPath, info.Info.OSType, info.Info.Architecture); err != nil {
		if info.Info.OSType != "linux" {
			return d, err
		}
		// The go command and this module's source can build one.
		built, berr := crossBuildAgent(ctx, GoArch(info.Info.Architecture))
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

// GoArch names an architecture as Go and OCI platforms do, whether a
// daemon reports it as uname -m does (Docker: "x86_64", "aarch64") or as Go
// does (Podman: "amd64", "arm64").
func GoArch(machine string) string {
	switch strings.ToLower(machine) {
	case "x86_64", "x86-64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return machine
}

// checkPlatform refuses an agent binary that cannot run on the daemon's
// OS and architecture, and says how to build one that can.
func checkPlatform(path, daemonOS, daemonArch string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w (build it with `make build`)", path, err)
	}
	defer f.Close()
	var agentArch string
	switch f.Machine {
	case elf.EM_X86_64:
		agentArch = "amd64"
	case elf.EM_AARCH64:
		agentArch = "arm64"
	default:
		agentArch = strings.ToLower(strings.TrimPrefix(f.Machine.String(), "EM_"))
	}
	want := GoArch(daemonArch)
	if daemonOS == "linux" && agentArch == want {
		return nil
	}
	return fmt.Errorf("%w: %s is linux/%s, the daemon runs %s/%s; build the agent for the daemon with `CGO_ENABLED=0 GOOS=linux GOARCH=%s go build -o bin/mcp-code-runner-agent-linux-%s ./cmd/mcp-code-runner-agent` in the source tree and set agent_path (MCR_AGENT_PATH) to it",
		ErrAgentPlatform, path, agentArch, daemonOS, want, want, want)
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// ensureAgentImage imports the agent image for the agent whose SHA-256 is
// sum unless the daemon has it, and returns its name.
func (b *Backend) ensureAgentImage(ctx context.Context, sum string) (string, error) {
	ref := agentImageRepo + ":" + sum[:16]
	if img, err := b.cli.ImageInspect(ctx, ref); err == nil && img.Config != nil && img.Config.Labels[LabelAgent] == sum {
		return ref, nil
	} else if err != nil && !cerrdefs.IsNotFound(err) {
		return "", b.classify(err, ref, "inspecting the agent image")
	}
	var layer bytes.Buffer
	if err := agentTar(&layer, b.opts.AgentPath, true); err != nil {
		return "", err
	}
	rc, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: &layer, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{"LABEL " + LabelAgent + "=" + sum, `CMD ["` + AgentPath + `"]`}})
	if err != nil {
		return "", b.classify(err, ref, "importing the agent image")
	}
	defer rc.Close()
	if err := importError(rc); err != nil {
		return "", fmt.Errorf("importing the agent image %s: %w", ref, err)
	}
	return ref, nil
}

// agentTar writes a tar of the agent, owned by root and read-only for
// everyone: the volume filled from it keeps these modes. As a layer it
// holds the agent at AgentPath, with its directories; otherwise only the
// file, named as in AgentDir.
func agentTar(w io.Writer, agent string, layer bool) error {
	data, err := os.ReadFile(agent)
	if err != nil {
		return fmt.Errorf("reading the agent binary: %w", err)
	}
	tw := tar.NewWriter(w)
	name := path.Base(AgentPath)
	if layer {
		for _, d := range []string{"opt/", "opt/mcp-code-runner/"} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
				return err
			}
		}
		name = strings.TrimPrefix(AgentPath, "/")
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o555, Size: int64(len(data))}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	return tw.Close()
}

// importError returns the error an image import's JSON message stream
// reports, if any.
func importError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// ensureAgentVolume makes the agent volume for the agent whose SHA-256 is
// sum, filled from image, unless it exists, and checks that it holds that
// agent and nothing else answers to its name.
func (b *Backend) ensureAgentVolume(ctx context.Context, image, sum string) (string, error) {
	name := agentVolumePrefix + sum[:16]
	v, err := b.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	switch {
	case err == nil && v.Volume.Labels[LabelAgent] != sum:
		return "", fmt.Errorf("volume %s exists without the label %s=%s, so it was not made by mcp-code-runner for this agent: remove it (`docker volume rm %s`) and start again", name, LabelAgent, sum, name)
	case err == nil:
	case cerrdefs.IsNotFound(err):
		if _, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{LabelManaged: "true", LabelAgent: sum}}); err != nil {
			return "", b.classify(err, image, "creating the agent volume")
		}
		// Docker copies the image's content at the mount point into an
		// empty named volume when a container that mounts it is created;
		// Podman only when one starts, and the container never starts, so
		// the agent is also copied in, which both engines do for a created
		// container.
		id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeVolume, Source: name, Target: AgentDir})
		if err != nil {
			return "", fmt.Errorf("filling the agent volume %s: %w", name, err)
		}
		var file bytes.Buffer
		err = agentTar(&file, b.opts.AgentPath, false)
		if err == nil {
			// Into the mount point itself: Podman writes a copy to "/" into
			// the container's own layer, past the volume.
			_, err = b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: AgentDir, Content: &file})
		}
		b.removeProbe(id)
		if err != nil {
			return "", fmt.Errorf("copying the agent into the agent volume %s: %w", name, err)
		}
	default:
		return "", b.classify(err, image, "inspecting the agent volume")
	}
	// Whatever made it, the volume must hold exactly this agent.
	id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeVolume, Source: name, Target: "/probe", ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	if err != nil {
		return "", fmt.Errorf("checking the agent volume %s: %w", name, err)
	}
	defer b.removeProbe(id)
	got, err := b.readFromContainer(ctx, id, "/probe/agent")
	if err != nil || sha256Hex(got) != sum {
		return "", fmt.Errorf("the agent volume %s does not hold the agent %s (%v): remove it (`docker volume rm %s`) and start again", name, sum[:16], err, name)
	}
	return name, nil
}

// daemonSees returns "" if the daemon sees path with content of SHA-256
// sum, else why not.
//
// The probe mounts path's directory, not path: Podman 4.3 cannot copy a
// file out of a container where a file is bind-mounted ("chdir: not a
// directory"), and the probe never starts, so nothing runs beside the
// directory's other files.
func (b *Backend) daemonSees(ctx context.Context, image, path, sum string) (string, error) {
	id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeBind, Source: filepath.Dir(path), Target: "/probe", ReadOnly: true})
	if err != nil {
		if cerrdefs.IsInvalidArgument(err) || strings.Contains(err.Error(), "does not exist") {
			return "the daemon does not see " + path, nil
		}
		return "", fmt.Errorf("asking the daemon whether it sees %s: %w", path, err)
	}
	defer b.removeProbe(id)
	got, err := b.readFromContainer(ctx, id, "/probe/"+filepath.Base(path))
	switch {
	case err != nil:
		return fmt.Sprintf("the daemon cannot read %s (%v)", path, err), nil
	case sha256Hex(got) != sum:
		return "the daemon sees another file at " + path, nil
	}
	return "", nil
}

// daemonSeesTempDir returns "" if the daemon sees this process's temporary
// directory, where agents' sockets go, else why not; it writes a marker of
// random content there and asks the daemon to read it.
func (b *Backend) daemonSeesTempDir(ctx context.Context, image string) (string, error) {
	dir, err := os.MkdirTemp("", socketsPrefix(b.owner))
	if err != nil {
		return "no directory for agent sockets: " + err.Error(), nil
	}
	defer os.RemoveAll(dir)
	marker := make([]byte, 32)
	_, _ = rand.Read(marker)
	path := filepath.Join(dir, "marker")
	if err := os.WriteFile(path, marker, 0o644); err != nil {
		return "no directory for agent sockets: " + err.Error(), nil
	}
	why, err := b.daemonSees(ctx, image, path, sha256Hex(marker))
	if why != "" {
		why = strings.Replace(why, path, os.TempDir(), 1)
	}
	return why, err
}

// probeContainer creates (and never starts) a container of image with m,
// labelled as this server's so that a sweep removes it if this process dies
// before it does.
func (b *Backend) probeContainer(ctx context.Context, image string, m mount.Mount) (string, error) {
	created, err := b.cli.ContainerCreate(context.WithoutCancel(ctx), client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: []string{AgentPath}, NetworkDisabled: true, Labels: map[string]string{
			LabelManaged: "true", LabelOwner: b.owner.id, LabelOwnerHost: b.owner.host, LabelOwnerPID: strconv.Itoa(b.owner.pid),
			LabelOwnerBoot: b.owner.start, LabelPurpose: "agent-probe",
		}},
		HostConfig: &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: []mount.Mount{m}},
	})
	if err != nil {
		return "", err
	}
	return created.ID, nil
}

func (b *Backend) removeProbe(id string) {
	_, _ = b.cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
}

// readFromContainer returns the content of the regular file at path in
// container id (which need not be running).
func (b *Backend) readFromContainer(ctx context.Context, id, path string) ([]byte, error) {
	res, err := b.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(tr, 1<<30))
}

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

// modulePath is this project's Go module, whose source crossBuildAgent
// looks for.
const modulePath = "github.com/mcp-code-runner/mcp-code-runner"

// crossBuildAgent builds the agent for linux/arch (static, CGO_ENABLED=0)
// into the user's cache directory, from the module's source tree found
// above the working directory or this executable, with the go command.
func crossBuildAgent(ctx context.Context, arch string) (string, error) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		return "", errors.New("no go command on PATH")
	}
	var starts []string
	if wd, err := os.Getwd(); err == nil {
		starts = append(starts, wd)
	}
	if exe, err := os.Executable(); err == nil {
		starts = append(starts, filepath.Dir(exe))
	}
	root := ""
	for _, start := range starts {
		if root = moduleRoot(start); root != "" {
			break
		}
	}
	if root == "" {
		// A server made by `go install module@version` has its source in
		// the module cache, where the go command put it.
		if bi, ok := debug.ReadBuildInfo(); ok {
			if gomodcache, err := exec.CommandContext(ctx, goCmd, "env", "GOMODCACHE").Output(); err == nil {
				root = moduleCacheSource(strings.TrimSpace(string(gomodcache)), bi.Main.Path, bi.Main.Version)
			}
		}
	}
	if root == "" {
		return "", fmt.Errorf("the source of %s is neither above the working directory or this executable nor in the module cache", modulePath)
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	out := filepath.Join(cache, "mcp-code-runner", "mcp-code-runner-agent-linux-"+arch)
	cmd := exec.CommandContext(ctx, goCmd, "build", "-trimpath", "-ldflags", "-s -w", "-o", out, "./cmd/mcp-code-runner-agent")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build for linux/%s in %s: %v: %s", arch, root, err, strings.TrimSpace(string(msg)))
	}
	return out, checkStatic(out)
}

// moduleCacheSource returns the directory of this module's source in the
// module cache gomodcache for the build's main module path and version
// (what debug.ReadBuildInfo reports), or "" when the binary was not built
// from a released version of this module. The module path is all lower
// case, so its cache directory needs no escaping.
func moduleCacheSource(gomodcache, mainPath, version string) string {
	if gomodcache == "" || mainPath != modulePath || version == "" || version == "(devel)" || strings.ContainsAny(version, `/\`) {
		return ""
	}
	dir := filepath.Join(gomodcache, filepath.FromSlash(modulePath)+"@"+version)
	if moduleRoot(dir) != dir {
		return ""
	}
	return dir
}

// moduleRoot returns the directory at or above dir whose go.mod declares
// modulePath, or "".
func moduleRoot(dir string) string {
	for {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil {
			first, _, _ := strings.Cut(string(data), "\n")
			if strings.TrimSpace(first) == "module "+modulePath {
				return dir
			}
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return ""
		}
		dir = parent
	}
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
