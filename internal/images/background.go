package images

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// BuildState is where an image stands in a background build.
type BuildState string

// The states of an image in a background build. An image moves from
// queued to building to available or failed, and stays there.
const (
	StateQueued    BuildState = "queued"
	StateBuilding  BuildState = "building"
	StateAvailable BuildState = "available"
	StateFailed    BuildState = "failed"
)

// ImageBuild is one image's place in a background build.
type ImageBuild struct {
	// Name is the registry's image name (native, say), Tag its reference.
	Name, Tag string
	State     BuildState
	// Present reports whether an image of the tag is there meanwhile (an
	// out-of-date one, being rebuilt): runs use it and need not wait.
	Present bool
	// Step and Steps are the Dockerfile step being built, of how many;
	// 0 before the first.
	Step, Steps int
	// Ahead is how many images build before a queued one.
	Ahead int
	// Err is why a failed build failed.
	Err error
	// Started and Ended are when the build began and ended; zero before.
	Started, Ended time.Time
}

// Detail says where the build stands, for people: "step 4/9", "2 images
// build first", "next to build", or why it failed.
func (b ImageBuild) Detail() string {
	switch b.State {
	case StateQueued:
		switch b.Ahead {
		case 0:
			return "next to build"
		case 1:
			return "1 image builds first"
		}
		return fmt.Sprintf("%d images build first", b.Ahead)
	case StateBuilding:
		if b.Steps > 0 {
			return fmt.Sprintf("step %d/%d", b.Step, b.Steps)
		}
		return "starting"
	case StateFailed:
		if b.Err != nil {
			return b.Err.Error()
		}
	}
	return ""
}

// Target is an image for a background build.
type Target struct {
	// Name is the registry's image name.
	Name string
	// Present reports whether an image of its tag is there already (out
	// of date): runs use it while it is rebuilt.
	Present bool
}

// BuildFunc builds the image of registry name image, and the images it
// builds on that are missing or out of date, writing the build's output
// to log. Serve's is [Build] of that one image at a low priority.
type BuildFunc func(ctx context.Context, image string, log io.Writer) error

// BackgroundOptions configure a Background.
type BackgroundOptions struct {
	// Build builds one image; required.
	Build BuildFunc
	// Log receives every build's output; nil discards it.
	Log io.Writer
	// Logger receives the milestones: an image starts building, is built,
	// fails.
	Logger *slog.Logger
	// OnBuilt, if set, is called once an image is built, before the runs
	// that wait for it are woken (the warm pool starts then).
	OnBuilt func(ImageBuild)
}

// BuildError is the failure of an image's background build.
type BuildError struct {
	Name, Tag string
	Err       error
}

func (e *BuildError) Error() string {
	return fmt.Sprintf("the background build of image %s failed: %v", e.Tag, e.Err)
}

func (e *BuildError) Unwrap() error { return e.Err }

// Background builds images one at a time while the server serves, and
// tells where each stands. A run in a language whose image it is building
// waits for it (WaitImage) instead of failing at once.
type Background struct {
	reg   *languages.Registry
	opts  BackgroundOptions
	log   *slog.Logger
	order []string // image names, in build order

	mu      sync.Mutex
	builds  map[string]*ImageBuild // by image name
	byTag   map[string]string      // tag -> image name
	changed chan struct{}          // closed and replaced on every change
	done    chan struct{}
}

// StartBackground builds targets one at a time in the background: those
// that are missing first, then those that are out of date, parents before
// their children as the registry lists them. An image whose parent failed
// fails without a build. The builds stop when ctx ends; the images not
// built by then fail with ctx's error.
func StartBackground(ctx context.Context, reg *languages.Registry, targets []Target, opts BackgroundOptions) *Background {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	b := &Background{reg: reg, opts: opts, log: log, builds: map[string]*ImageBuild{}, byTag: map[string]string{},
		changed: make(chan struct{}), done: make(chan struct{})}
	wanted := map[string]Target{}
	for _, t := range targets {
		wanted[t.Name] = t
	}
	for _, present := range []bool{false, true} {
		for _, img := range reg.Images() {
			if t, ok := wanted[img.Name]; ok && t.Present == present && b.builds[img.Name] == nil {
				b.order = append(b.order, img.Name)
				b.builds[img.Name] = &ImageBuild{Name: img.Name, Tag: img.Tag, State: StateQueued, Present: t.Present}
				b.byTag[img.Tag] = img.Name
			}
		}
	}
	go b.run(ctx)
	return b
}

// Done is closed once every build has ended.
func (b *Background) Done() <-chan struct{} { return b.done }

func (b *Background) run(ctx context.Context) {
	defer close(b.done)
	for _, name := range b.order {
		img, _ := b.reg.Image(name)
		if err := ctx.Err(); err != nil {
			b.finish(name, fmt.Errorf("the server stopped before it was built: %w", err))
			continue
		}
		if err := b.parentFailed(img); err != nil {
			b.finish(name, err)
			continue
		}
		b.update(name, func(ib *ImageBuild) { ib.State, ib.Started = StateBuilding, time.Now() })
		b.log.Info("building runtime image in the background", "image", img.Tag)
		w := &stepLog{b: b, name: name, out: b.opts.Log}
		err := b.opts.Build(ctx, name, w)
		w.Close()
		switch {
		case err != nil && ctx.Err() != nil:
			// The server is stopping: the build was cut short, not broken;
			// the next start builds it again.
			b.log.Info("background build of a runtime image stopped with the server; the next start builds it",
				"image", img.Tag)
		case err != nil:
			b.log.Error("background build of a runtime image failed; its languages fail until it is built",
				"image", img.Tag, "err", err, "log_tail", w.tail(), "fix", "mcp-code-runner images build "+name)
		}
		b.finish(name, err)
	}
}

// parentFailed returns why img cannot build: its parent was to be built
// here and was not.
func (b *Background) parentFailed(img languages.Image) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if p, ok := b.builds[img.From]; ok && p.State == StateFailed {
		return fmt.Errorf("it builds on image %s, whose build failed: %w", p.Tag, p.Err)
	}
	return nil
}

// finish ends name's build: built when err is nil, else failed. OnBuilt
// runs before the image counts as built, so that what it starts (a warm
// pool) is there for the first run that sees it built.
func (b *Background) finish(name string, err error) {
	now := time.Now()
	if err == nil {
		b.mu.Lock()
		built := *b.builds[name]
		b.mu.Unlock()
		built.State, built.Present, built.Ended = StateAvailable, true, now
		b.log.Info("runtime image built in the background", "image", built.Tag, "took", now.Sub(built.Started).Round(time.Second))
		if b.opts.OnBuilt != nil {
			b.opts.OnBuilt(built)
		}
	}
	b.update(name, func(ib *ImageBuild) {
		ib.Ended = now
		if err != nil {
			ib.State, ib.Err = StateFailed, err
			return
		}
		ib.State, ib.Present = StateAvailable, true
	})
}

// update changes name's build under the lock and wakes the waiters.
func (b *Background) update(name string, f func(*ImageBuild)) {
	b.mu.Lock()
	f(b.builds[name])
	b.mu.Unlock()
	b.broadcast()
}

func (b *Background) broadcast() {
	b.mu.Lock()
	defer b.mu.Unlock()
	close(b.changed)
	b.changed = make(chan struct{})
}

// Builds returns every image's build, in build order.
func (b *Background) Builds() []ImageBuild {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]ImageBuild, 0, len(b.order))
	for _, name := range b.order {
		out = append(out, b.snapshot(name))
	}
	return out
}

// Build returns the build of the image of tag; false when tag is not one
// of the builder's.
func (b *Background) Build(tag string) (ImageBuild, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	name, ok := b.byTag[tag]
	if !ok {
		return ImageBuild{}, false
	}
	return b.snapshot(name), true
}

// snapshot copies name's build with its queue position; with b locked.
func (b *Background) snapshot(name string) ImageBuild {
	ib := *b.builds[name]
	if ib.State == StateQueued {
		for _, n := range b.order {
			if n == name {
				break
			}
			if s := b.builds[n].State; s == StateQueued || s == StateBuilding {
				ib.Ahead++
			}
		}
	}
	return ib
}

// ImageState returns, for an image a run would have to wait for or that
// failed, its state ("building", "queued", "failed") and its detail (see
// ImageBuild.Detail); "" when runs need not wait: the image is not the
// builder's, is built, or is there meanwhile.
func (b *Background) ImageState(tag string) (state, detail string) {
	ib, ok := b.Build(tag)
	if !ok || ib.Present {
		return "", ""
	}
	return string(ib.State), ib.Detail()
}

// WaitImage waits until the image of tag is built (nil), its build fails
// (a *BuildError), or ctx ends (ctx's error). progress, if set, gets the
// state and detail at the start and on every change while it waits. An
// image the builder is not making returns nil at once.
func (b *Background) WaitImage(ctx context.Context, tag string, progress func(state, detail string)) error {
	var last string
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		ib, ok := b.Build(tag)
		switch {
		case !ok || ib.Present:
			return nil
		case ib.State == StateFailed:
			return &BuildError{Name: ib.Name, Tag: ib.Tag, Err: ib.Err}
		}
		if now := string(ib.State) + ": " + ib.Detail(); now != last && progress != nil {
			last = now
			progress(string(ib.State), ib.Detail())
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// stepRE matches the legacy builder's "Step 4/9 : RUN ..." lines.
var stepRE = regexp.MustCompile(`^Step (\d+)/(\d+) :`)

// tailLines is how many of a build's last lines its failure logs.
const tailLines = 10

// stepLog passes a build's output on to the build log and follows its
// Dockerfile steps; it keeps the last lines for a failure's report.
type stepLog struct {
	b       *Background
	name    string
	out     io.Writer
	partial []byte
	last    []string
}

func (w *stepLog) Write(p []byte) (int, error) {
	_, _ = w.out.Write(p)
	w.partial = append(w.partial, p...)
	for {
		i := bytes.IndexByte(w.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		w.line(strings.TrimRight(string(w.partial[:i]), "\r"))
		w.partial = w.partial[i+1:]
	}
}

// Close takes in a last line that has no newline.
func (w *stepLog) Close() {
	if len(w.partial) > 0 {
		w.line(string(w.partial))
		w.partial = nil
	}
}

func (w *stepLog) line(l string) {
	if strings.TrimSpace(l) == "" {
		return
	}
	w.last = append(w.last, l)
	if len(w.last) > tailLines {
		w.last = w.last[1:]
	}
	m := stepRE.FindStringSubmatch(l)
	if m == nil {
		return
	}
	step, _ := strconv.Atoi(m[1])
	steps, _ := strconv.Atoi(m[2])
	w.b.update(w.name, func(ib *ImageBuild) { ib.Step, ib.Steps = step, steps })
}

func (w *stepLog) tail() string { return strings.Join(w.last, "\n") }

// Builds is a server's background builder before and after it starts: the
// engine is made first and waits on it (engine.ImageBuilds), and the
// builder starts later, once the server knows which images are missing.
// Until Start, and without a start, no image is being built. The zero
// value is ready to use.
type Builds struct {
	bg atomic.Pointer[Background]

	mu    sync.Mutex
	built []func(image string)
}

// Start starts the builder (StartBackground) and makes it the one whose
// images runs wait for; what OnBuilt registered hears of each image it
// builds, after opts.OnBuilt.
func (b *Builds) Start(ctx context.Context, reg *languages.Registry, targets []Target, opts BackgroundOptions) *Background {
	first := opts.OnBuilt
	opts.OnBuilt = func(ib ImageBuild) {
		if first != nil {
			first(ib)
		}
		b.mu.Lock()
		built := slices.Clone(b.built)
		b.mu.Unlock()
		for _, f := range built {
			f(ib.Tag)
		}
	}
	bg := StartBackground(ctx, reg, targets, opts)
	b.bg.Store(bg)
	return bg
}

// OnBuilt makes built hear of every image the builder builds, by tag.
func (b *Builds) OnBuilt(built func(image string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.built = append(b.built, built)
}

// ImageState is the started builder's (Background.ImageState); "" before
// it starts.
func (b *Builds) ImageState(tag string) (state, detail string) {
	if bg := b.bg.Load(); bg != nil {
		return bg.ImageState(tag)
	}
	return "", ""
}

// WaitImage is the started builder's (Background.WaitImage); nil at once
// before it starts.
func (b *Builds) WaitImage(ctx context.Context, tag string, progress func(state, detail string)) error {
	if bg := b.bg.Load(); bg != nil {
		return bg.WaitImage(ctx, tag, progress)
	}
	return nil
}
