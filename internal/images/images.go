// Package images builds the runtime images of the language registry and reports
// their state. Images are built locally with the Docker daemon's legacy builder
// from Dockerfiles embedded in the binary, on top of a bare Debian trixie image
// that is pulled where a registry is reachable and bootstrapped otherwise.
//
// Every image carries labels: io.mcp-code-runner.managed=true; the hash of its
// Dockerfile and parent image (so that only missing or changed images are
// rebuilt); and the version each of its languages reports, measured in a
// throwaway sandbox right after the build.
package images

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/build"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

//go:embed dockerfiles
var dockerfiles embed.FS

// Labels of the images this package builds.
const (
	// LabelManaged marks images built by mcp-code-runner.
	LabelManaged = "io.mcp-code-runner.managed"
	// LabelDockerfileHash holds the hash of the Dockerfile and the parent
	// image ID the image was built from; it is set only once the image's
	// languages have answered their version command.
	LabelDockerfileHash = "io.mcp-code-runner.dockerfile-sha256"
	// LabelBuildStage marks the images of a Dockerfile's earlier build
	// stages, which are deleted once the image is built.
	LabelBuildStage = "io.mcp-code-runner.build-stage"
	// LabelRuntimeVersionPrefix + language name holds the first line the
	// language's version command printed.
	LabelRuntimeVersionPrefix = "io.mcp-code-runner.runtime-version."
	// LabelPreinstalledPrefix + language name holds the packages the
	// language's preinstalled command listed, as a JSON object of names to
	// versions.
	LabelPreinstalledPrefix = "io.mcp-code-runner.preinstalled."
)

// Options control Build.
type Options struct {
	// Log receives the build output; nil discards it.
	Log io.Writer
	// Force rebuilds the named images even when they are up to date, without
	// the build cache (so that they get the archives' current packages).
	// Their parents are rebuilt only when missing or changed.
	Force bool
	// Mirror is the Debian mirror for bootstrapping the root image; empty
	// takes it from the host's apt configuration.
	Mirror string
	// RootImage is the image the daemon pulls for the root image; empty
	// pulls PullRef. A registry mirror's copy of it, for daemons that
	// cannot reach Docker Hub.
	RootImage string
	// Platform is the platform to build the images for, "linux/amd64" or
	// "linux/arm64" (see ParsePlatform); empty is the daemon's own. Images
	// of another platform replace the daemon's own of the same tags, and its
	// sandboxes cannot use them: they are for a daemon of that platform.
	Platform string
	// ExtraCACerts are PEM certificates that package managers inside builds
	// must trust besides the usual ones (a TLS-intercepting proxy). Nil takes
	// the host's locally added ones (see HostExtraCACerts). They reach only
	// Dockerfiles that declare ARG EXTRA_CA_CERTS, in a build stage whose
	// files are not copied into the image.
	ExtraCACerts []byte
	// Parallel is how many images build at a time (0: DefaultParallel).
	Parallel int
	// LowPriority gives the build containers the least CPU weight, so that
	// sandboxes running beside a build (serve's background builder) keep
	// the CPU they need; the build takes what they leave.
	LowPriority bool
}

// lowCPUShares is the CPU weight of a low-priority build's containers:
// Docker's least (1024 is the default), a cgroup v2 weight of 1.
const lowCPUShares = 2

// HostExtraCACerts returns the certificates the administrator added to this
// machine's trust store (/usr/local/share/ca-certificates/**/*.crt), the
// Debian and Ubuntu convention; usually none.
func HostExtraCACerts() []byte {
	var out []byte
	_ = filepath.WalkDir("/usr/local/share/ca-certificates", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".crt") {
			if data, err := os.ReadFile(p); err == nil {
				out = append(append(out, bytes.TrimSpace(data)...), '\n')
			}
		}
		return nil
	})
	return out
}

// ImageStatus is the state of one registry image in the daemon.
type ImageStatus struct {
	// Name is the registry's short name (python, say).
	Name string
	// Tag is the image reference ("mcp-code-runner/python:1").
	Tag string
	// Present reports whether the tag exists in the daemon.
	Present bool
	// ID is the image ID when present.
	ID string
	// Size is the image's size in bytes, including its parents' layers.
	Size int64
	// RuntimeVersions maps each language of the image to the version it
	// reported when the image was built.
	RuntimeVersions map[string]string
	// UpToDate reports whether the image was built, and verified, from the
	// current Dockerfile on the current parent image.
	UpToDate bool
	// Optional reports whether the image is built only when asked for (a
	// variant no language runs in), so that its absence is no fault.
	Optional bool
	// OnDemand reports whether the image is left out of the default set
	// (see languages.Image.OnDemand): its absence is no fault either, only
	// its languages cannot run until it is built.
	OnDemand bool
}

// buildContext is what an image is built from: its Dockerfile and the files
// its COPY instructions take.
type buildContext struct {
	dockerfile []byte
	// files maps names in the context to contents. A built-in Dockerfile
	// NAME.Dockerfile gets the embedded files under dockerfiles/NAME/.
	files map[string][]byte
}

// loadContext reads the build context of img: the embedded Dockerfile of
// that name with its files, or else the Dockerfile at that path alone.
func loadContext(img languages.Image) (buildContext, error) {
	data, err := dockerfiles.ReadFile("dockerfiles/" + img.Dockerfile)
	if err != nil {
		data, err = os.ReadFile(img.Dockerfile)
		if err != nil {
			return buildContext{}, fmt.Errorf("image %s: Dockerfile %q is neither built in nor a readable file: %w", img.Name, img.Dockerfile, err)
		}
		return buildContext{dockerfile: data}, nil
	}
	bc := buildContext{dockerfile: data, files: map[string][]byte{}}
	dir := "dockerfiles/" + strings.TrimSuffix(img.Dockerfile, ".Dockerfile")
	entries, err := dockerfiles.ReadDir(dir)
	if err != nil {
		return bc, nil // no files beside this Dockerfile
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		content, err := dockerfiles.ReadFile(dir + "/" + e.Name())
		if err != nil {
			return buildContext{}, fmt.Errorf("image %s: reading %s: %w", img.Name, e.Name(), err)
		}
		bc.files[e.Name()] = content
	}
	return bc, nil
}

// hash is the value of LabelDockerfileHash for bc built on the parent image
// with the given ID. A context of the Dockerfile alone hashes as before
// files were added, so existing images stay up to date.
func (bc buildContext) hash(parentID string) string {
	h := sha256.New()
	h.Write(bc.dockerfile)
	h.Write([]byte{0})
	h.Write([]byte(parentID))
	for _, name := range slices.Sorted(maps.Keys(bc.files)) {
		fmt.Fprintf(h, "\x00%s\x00%d\x00", name, len(bc.files[name]))
		h.Write(bc.files[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Resolve turns image names and language names or aliases into the image
// names to build; no names means the default set: every image but the
// optional variants (built only when named, see [languages.Registry.Optional])
// and the on-demand images (see [languages.Image.OnDemand]).
func Resolve(reg *languages.Registry, names []string) ([]string, error) {
	if len(names) == 0 {
		var defaults []string
		for _, img := range reg.Images() {
			if reg.Default(img) {
				defaults = append(defaults, img.Name)
			}
		}
		return defaults, nil
	}
	var out []string
	for _, n := range names {
		if _, ok := reg.Image(n); ok {
			out = append(out, n)
		} else if l, ok := reg.Lookup(n); ok {
			out = append(out, l.Image)
		} else {
			var valid []string
			for _, img := range reg.Images() {
				valid = append(valid, img.Name)
			}
			return nil, fmt.Errorf("%q is neither an image nor a language: images are %s; languages are %s",
				n, strings.Join(valid, ", "), strings.Join(reg.Names(), ", "))
		}
	}
	return out, nil
}

// All returns the names of every image but the optional variants: the
// default set and the on-demand images, what `images build --all` builds.
func All(reg *languages.Registry) []string {
	var all []string
	for _, img := range reg.Images() {
		if !reg.Optional(img) {
			all = append(all, img.Name)
		}
	}
	return all
}

// Build builds the named images (image names or language names; none means
// the default set, see Resolve) and the images they build on. An image is
// skipped when it exists and its LabelDockerfileHash matches its Dockerfile
// and current parent, unless opts.Force names it. After each build, every
// language of the image runs its version command in a throwaway sandbox, and
// the image is relabeled with the versions and the hash.
//
// Images build side by side, up to opts.Parallel at a time, each once its
// parent is built: most of a build is waiting on package downloads, and the
// images above the base one are independent of each other. The first
// failure stops the builds in progress and is the error returned.
func Build(ctx context.Context, cli *client.Client, reg *languages.Registry, names []string, opts Options) error {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	if opts.ExtraCACerts == nil {
		opts.ExtraCACerts = HostExtraCACerts()
	}
	targets, err := Resolve(reg, names)
	if err != nil {
		return err
	}
	platform, daemon, err := buildPlatform(ctx, cli, opts.Platform, log)
	if err != nil {
		return err
	}
	measure, err := newProbe(ctx, cli, platform, daemon)
	if err != nil {
		return err
	}
	forced := map[string]bool{}
	for _, n := range targets {
		forced[n] = opts.Force
	}
	order, rootNeeded := buildOrder(reg, targets)
	var rootID string
	if rootNeeded {
		if rootID, err = EnsureRoot(ctx, cli, opts.RootImage, platform, opts.Mirror, log); err != nil {
			return err
		}
	}

	var (
		logs     = newBuildLogs(log, opts.Parallel != 1 && len(order) > 1)
		mu       sync.Mutex
		replaced []string // IDs of the previous versions of rebuilt images, parents before children
	)
	err = schedule(ctx, order, opts.Parallel, func(ctx context.Context, img languages.Image, parentID string) (string, error) {
		parentTag := RootTag
		if img.From == "root" {
			parentID = rootID
		} else {
			parent, _ := reg.Image(img.From)
			parentTag = parent.Tag
		}
		w := logs.of(img.Name)
		defer w.Close()
		var shares int64
		if opts.LowPriority {
			shares = lowCPUShares
		}
		id, prev, err := buildIfStale(ctx, cli, reg, img, parentID, parentTag, platform, measure, forced[img.Name], opts.ExtraCACerts, shares, w)
		if prev != "" {
			mu.Lock()
			replaced = append(replaced, prev)
			mu.Unlock()
		}
		return id, err
	})
	// After every build: a build-stage image deleted while another build
	// runs could be one that build is about to copy from.
	removeBuildStages(context.WithoutCancel(ctx), cli, log)
	if err != nil {
		return err
	}
	removeReplaced(ctx, cli, replaced, log)
	return nil
}

// buildOrder is the images targets need, themselves and the images they
// build on, parents before children as the registry lists them, and
// whether one of them builds on the root image.
func buildOrder(reg *languages.Registry, targets []string) (order []languages.Image, rootNeeded bool) {
	needed := map[string]bool{}
	for _, n := range targets {
		for img, ok := reg.Image(n); ok; img, ok = reg.Image(img.From) {
			needed[img.Name] = true
		}
	}
	for _, img := range reg.Images() {
		if needed[img.Name] {
			order = append(order, img)
			rootNeeded = rootNeeded || img.From == "root"
		}
	}
	return order, rootNeeded
}

// removeReplaced removes the previous versions of rebuilt images, children
// first, so that a replaced parent has no children left. An image still
// used by a container stays; it only costs disk space.
func removeReplaced(ctx context.Context, cli *client.Client, replaced []string, log io.Writer) {
	for _, r := range slices.Backward(replaced) {
		if _, err := cli.ImageRemove(ctx, r, client.ImageRemoveOptions{PruneChildren: true}); err != nil && !cerrdefs.IsNotFound(err) {
			fmt.Fprintf(log, "kept the previous image %s: %v\n", r, err)
		}
	}
}

// schedule calls build for every image of order (parents listed before
// their children), each once its parent's build has returned, with the
// parent's ID (none for an image built on the root image), and at most
// parallel at a time (0: DefaultParallel). Of the images ready to build, the
// one with the longest line of builds ahead (buildAhead) starts first, ties
// in order's order: the long builds, and the images waiting on them, do not
// start last and leave the run waiting on one build at its end. The first
// failure cancels the context of the builds in progress, no build starts
// after it, and it is the error returned; an image whose parent failed is not
// built.
func schedule(ctx context.Context, order []languages.Image, parallel int, build func(ctx context.Context, img languages.Image, parentID string) (string, error)) error {
	if parallel <= 0 {
		parallel = DefaultParallel
	}
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	type finished struct {
		name, id string
		err      error
	}
	var (
		ahead    = buildAhead(order)
		inOrder  = map[string]bool{}
		ids      = map[string]string{} // the built images' IDs
		started  = map[string]bool{}
		results  = make(chan finished)
		running  int
		firstErr error
	)
	for _, img := range order {
		inOrder[img.Name] = true
	}
	// next is the ready image to start now, if any: not started, its parent
	// built (or not one of order's), the longest line ahead first.
	next := func() (img languages.Image, parentID string, ok bool) {
		for _, c := range order {
			pid, built := ids[c.From]
			if started[c.Name] || (inOrder[c.From] && !built) {
				continue
			}
			if !ok || ahead[c.Name] > ahead[img.Name] {
				img, parentID, ok = c, pid, true
			}
		}
		return img, parentID, ok
	}
	for {
		for firstErr == nil && ctx.Err() == nil && running < parallel {
			img, parentID, ok := next()
			if !ok {
				break
			}
			started[img.Name] = true
			running++
			go func() {
				id, err := build(ctx, img, parentID)
				if err == nil && id == "" {
					err = fmt.Errorf("building image %s gave no image ID", img.Tag)
				}
				results <- finished{img.Name, id, err}
			}()
		}
		if running == 0 {
			break
		}
		r := <-results
		running--
		if r.err != nil {
			if firstErr == nil {
				firstErr = r.err
				stop()
			}
			continue
		}
		ids[r.name] = r.id
	}
	if firstErr != nil {
		return firstErr
	}
	return ctx.Err()
}

// buildAhead is, for each image of order, the seconds of builds ahead of a
// run once it is ready: its own BuildSeconds and the longest such line of
// the images built on it (order lists parents before children).
func buildAhead(order []languages.Image) map[string]int {
	ahead := map[string]int{}
	for _, img := range slices.Backward(order) {
		ahead[img.Name] += img.BuildSeconds
		ahead[img.From] = max(ahead[img.From], ahead[img.Name])
	}
	return ahead
}

// DefaultParallel is how many images Build builds at a time when
// Options.Parallel is unset. Most of a build waits on package downloads and
// dpkg, so a few side by side finish sooner even on two cores; more would
// mostly compete for the disk and the daemon.
const DefaultParallel = 3

// buildIfStale builds img on its parent unless an image of the same hash is
// there already. It returns the image's ID and, when it replaced an older
// image, that image's ID.
func buildIfStale(ctx context.Context, cli *client.Client, reg *languages.Registry, img languages.Image, parentID, parentTag string, platform ocispec.Platform, measure probe, force bool, extraCACerts []byte, cpuShares int64, log io.Writer) (id, prev string, err error) {
	bc, err := loadContext(img)
	if err != nil {
		return "", "", err
	}
	hash := bc.hash(parentID)
	cur, err := cli.ImageInspect(ctx, img.Tag)
	switch {
	case err == nil && !force && cur.Config != nil && cur.Config.Labels[LabelDockerfileHash] == hash:
		fmt.Fprintf(log, "%s is up to date\n", img.Tag)
		return cur.ID, "", nil
	case err != nil && !cerrdefs.IsNotFound(err):
		return "", "", fmt.Errorf("inspecting image %s: %w", img.Tag, err)
	}
	args := map[string]string{"BASE": parentTag}
	if len(extraCACerts) > 0 && bytes.Contains(bc.dockerfile, []byte("ARG EXTRA_CA_CERTS")) {
		args["EXTRA_CA_CERTS"] = string(extraCACerts)
	}
	id, err = buildImage(ctx, cli, reg, img, bc, platform, measure, args, hash, force, cpuShares, log)
	if err != nil {
		return "", "", err
	}
	if cur.ID != "" && cur.ID != id {
		prev = cur.ID
	}
	return id, prev, nil
}

// buildImage builds one image for platform, measures its languages'
// versions and labels it.
func buildImage(ctx context.Context, cli *client.Client, reg *languages.Registry, img languages.Image, bc buildContext, platform ocispec.Platform, measure probe, args map[string]string, hash string, noCache bool, cpuShares int64, log io.Writer) (string, error) {
	start := time.Now()
	fmt.Fprintf(log, "building %s for %s from %s on %s\n", img.Tag, platformString(platform), img.Dockerfile, args["BASE"])
	langs := reg.LanguagesOf(img.Name)
	// The hash, the versions and the package lists are cleared (they may be
	// inherited from the parent) until they have been measured.
	labels := map[string]string{LabelManaged: "true", LabelDockerfileHash: ""}
	for _, l := range langs {
		labels[LabelRuntimeVersionPrefix+l.Name] = ""
		labels[LabelPreinstalledPrefix+l.Name] = ""
	}
	if _, err := runBuild(ctx, cli, img.Tag, bc, platform, args, labels, noCache, cpuShares, log); err != nil {
		return "", fmt.Errorf("building image %s: %w", img.Tag, execFormatHint(err, platform))
	}
	labels[LabelDockerfileHash] = hash
	for _, l := range langs {
		if !l.RunsOn(platform.Architecture) {
			fmt.Fprintf(log, "%s: not measured: it runs only on %s, this image is for %s\n", l.Name, strings.Join(l.Architectures, ", "), platformString(platform))
			continue
		}
		v, err := measure.version(ctx, img.Tag, l)
		if err != nil {
			return "", fmt.Errorf("image %s was built but language %s does not work in it: %w", img.Tag, l.Name, execFormatHint(err, platform))
		}
		fmt.Fprintf(log, "%s: %s\n", l.Name, v)
		labels[LabelRuntimeVersionPrefix+l.Name] = v
		if len(l.Preinstalled) > 0 {
			pkgs, err := measure.preinstalled(ctx, img.Tag, l)
			if err != nil {
				return "", fmt.Errorf("image %s was built but listing the packages of language %s failed: %w", img.Tag, l.Name, err)
			}
			data, _ := json.Marshal(pkgs)
			fmt.Fprintf(log, "%s: %d preinstalled packages\n", l.Name, len(pkgs))
			labels[LabelPreinstalledPrefix+l.Name] = string(data)
		}
	}
	id, err := runBuild(ctx, cli, img.Tag, buildContext{dockerfile: []byte("FROM " + img.Tag + "\n")}, platform, nil, labels, false, 0, io.Discard)
	if err != nil {
		return "", fmt.Errorf("labeling image %s: %w", img.Tag, err)
	}
	fmt.Fprintf(log, "built %s in %s\n", img.Tag, time.Since(start).Round(100*time.Millisecond))
	return id, nil
}

// removeBuildStages deletes the untagged images of earlier build stages
// (those labeled LabelBuildStage); a failure only costs disk space.
func removeBuildStages(ctx context.Context, cli *client.Client, log io.Writer) {
	res, err := cli.ImageList(ctx, client.ImageListOptions{Filters: client.Filters{}.Add("dangling", "true").Add("label", LabelBuildStage)})
	if err != nil {
		fmt.Fprintf(log, "listing build-stage images: %v\n", err)
		return
	}
	for _, img := range res.Items {
		if _, err := cli.ImageRemove(ctx, img.ID, client.ImageRemoveOptions{PruneChildren: true}); err != nil {
			fmt.Fprintf(log, "removing build-stage image %s: %v\n", img.ID, err)
		}
	}
}

// runBuild builds bc for platform with the legacy builder and host
// networking (without the build cache if noCache; its containers at CPU
// weight cpuShares, 0 the default), tags the result, streams the output to
// log and returns the image ID.
func runBuild(ctx context.Context, cli *client.Client, tag string, bc buildContext, platform ocispec.Platform, args, labels map[string]string, noCache bool, cpuShares int64, log io.Writer) (string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	files := map[string][]byte{"Dockerfile": bc.dockerfile}
	maps.Copy(files, bc.files)
	for _, name := range slices.Sorted(maps.Keys(files)) {
		mode := int64(0o644)
		if bytes.HasPrefix(files[name], []byte("#!")) {
			mode = 0o755
		}
		hdr := &tar.Header{Name: name, Mode: mode, Size: int64(len(files[name])), ModTime: time.Unix(0, 0)}
		if err := tw.WriteHeader(hdr); err != nil {
			return "", fmt.Errorf("writing the build context: %w", err)
		}
		if _, err := tw.Write(files[name]); err != nil {
			return "", fmt.Errorf("writing the build context: %w", err)
		}
	}
	if err := tw.Close(); err != nil {
		return "", fmt.Errorf("writing the build context: %w", err)
	}
	buildArgs := map[string]*string{}
	for k, v := range args {
		buildArgs[k] = &v
	}
	res, err := cli.ImageBuild(ctx, &buf, client.ImageBuildOptions{
		Tags:        []string{tag},
		Dockerfile:  "Dockerfile",
		BuildArgs:   buildArgs,
		Labels:      labels,
		NetworkMode: "host",
		NoCache:     noCache,
		CPUShares:   cpuShares,
		Remove:      true,
		ForceRemove: true,
		Version:     build.BuilderV1,
		Platforms:   []ocispec.Platform{platform},
	})
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	id, err := readStream(res.Body, log)
	if err != nil {
		return "", err
	}
	if id == "" {
		return imageID(ctx, cli, tag)
	}
	return id, nil
}

// readStream reads the daemon's JSON progress messages from r, writes their
// text to log and returns the image ID reported, or the error reported.
func readStream(r io.Reader, log io.Writer) (string, error) {
	var id string
	dec := json.NewDecoder(r)
	for {
		var msg struct {
			Stream      string
			ErrorDetail *struct{ Message string }
			Aux         *struct{ ID string }
		}
		if err := dec.Decode(&msg); errors.Is(err, io.EOF) {
			return id, nil
		} else if err != nil {
			return "", fmt.Errorf("reading the daemon's output: %w", err)
		}
		if msg.ErrorDetail != nil {
			return "", errors.New(strings.TrimSpace(msg.ErrorDetail.Message))
		}
		if msg.Aux != nil && msg.Aux.ID != "" {
			id = msg.Aux.ID
		}
		_, _ = io.WriteString(log, msg.Stream)
	}
}

// Status reports every registry image in build order.
func Status(ctx context.Context, cli *client.Client, reg *languages.Registry) ([]ImageStatus, error) {
	ids := map[string]string{}
	rootID, err := imageID(ctx, cli, RootTag)
	if err != nil {
		return nil, err
	}
	ids["root"] = rootID
	var out []ImageStatus
	for _, img := range reg.Images() {
		st := ImageStatus{Name: img.Name, Tag: img.Tag, RuntimeVersions: map[string]string{}}
		res, err := cli.ImageInspect(ctx, img.Tag)
		if err != nil && !cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("inspecting image %s: %w", img.Tag, err)
		}
		if err == nil {
			st.Present, st.ID, st.Size = true, res.ID, res.Size
			var labels map[string]string
			if res.Config != nil {
				labels = res.Config.Labels
			}
			for _, l := range reg.LanguagesOf(img.Name) {
				if v := labels[LabelRuntimeVersionPrefix+l.Name]; v != "" {
					st.RuntimeVersions[l.Name] = v
				}
			}
			if bc, err := loadContext(img); err == nil && ids[img.From] != "" {
				st.UpToDate = labels[LabelDockerfileHash] == bc.hash(ids[img.From])
			}
		}
		st.Optional = reg.Optional(img)
		st.OnDemand = img.OnDemand
		ids[img.Name] = st.ID
		out = append(out, st)
	}
	return out, nil
}

// RuntimeVersions maps each language whose image is present and labeled to
// the version recorded when the image was built. Images that are missing or
// cannot be inspected are left out.
func RuntimeVersions(ctx context.Context, cli *client.Client, reg *languages.Registry) map[string]string {
	out := map[string]string{}
	recorded := NewLocalVersions(cli, reg)
	for _, l := range reg.Languages() {
		if v, err := recorded.RuntimeVersion(ctx, l); err == nil && v != "" {
			out[l.Name] = v
		}
	}
	return out
}

// LocalVersions reads the runtime versions that Build records in the labels
// of the images in the local Docker image store.
type LocalVersions struct {
	cli *client.Client
	reg *languages.Registry
}

// NewLocalVersions returns the versions recorded on the images of reg that
// cli's daemon holds.
func NewLocalVersions(cli *client.Client, reg *languages.Registry) *LocalVersions {
	return &LocalVersions{cli: cli, reg: reg}
}

// RuntimeVersion returns the version recorded for l when its image was
// built; "" when the image has none.
func (v *LocalVersions) RuntimeVersion(ctx context.Context, l languages.Language) (string, error) {
	tag := v.reg.ImageOf(l).Tag
	res, err := v.cli.ImageInspect(ctx, tag)
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", tag, err)
	}
	if res.Config == nil {
		return "", nil
	}
	return res.Config.Labels[LabelRuntimeVersionPrefix+l.Name], nil
}

// Preinstalled returns the packages recorded for l when its image was
// built, names to versions; nil when the image has none.
func (v *LocalVersions) Preinstalled(ctx context.Context, l languages.Language) (map[string]string, error) {
	tag := v.reg.ImageOf(l).Tag
	res, err := v.cli.ImageInspect(ctx, tag)
	if err != nil {
		return nil, fmt.Errorf("inspecting image %s: %w", tag, err)
	}
	if res.Config == nil || res.Config.Labels[LabelPreinstalledPrefix+l.Name] == "" {
		return nil, nil
	}
	var pkgs map[string]string
	if err := json.Unmarshal([]byte(res.Config.Labels[LabelPreinstalledPrefix+l.Name]), &pkgs); err != nil {
		return nil, fmt.Errorf("image %s: label %s: %w", tag, LabelPreinstalledPrefix+l.Name, err)
	}
	return pkgs, nil
}
