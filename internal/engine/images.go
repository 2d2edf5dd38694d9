package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// ImageBuilds is serve's background builder of runtime images
// (images.Background): the images it is making, and a wait for one. The
// engine knows it only through this, as it knows backends through theirs.
type ImageBuilds interface {
	// ImageState returns, for an image a run would have to wait for or
	// whose build failed, "building", "queued" or "failed" and a detail
	// for people ("step 4/9", "2 images build first", the failure); ""
	// when runs need not wait for it.
	ImageState(image string) (state, detail string)
	// WaitImage waits until image is built (nil), its build fails (an
	// error that names the failure), or ctx ends (ctx's error); progress
	// gets the state and detail at the start and on every change.
	WaitImage(ctx context.Context, image string, progress func(state, detail string)) error
	// OnBuilt makes built hear of every image built from now on, by tag:
	// the engine reads its languages' versions again and starts their
	// warm pools.
	OnBuilt(built func(image string))
}

// The states ImageState reports, as list_languages shows them, and the
// two list_languages adds: available (the image is there) and missing
// (it is not, and nothing builds it).
const (
	ImageBuilding  = "building"
	ImageQueued    = "queued"
	ImageFailed    = "failed"
	ImageAvailable = "available"
	ImageMissing   = "missing"
)

// WithImageBuilds makes runs in a language whose image b is building wait
// for it, and StartPool hold the pools of those languages until b says
// their image is built. A server's builder starts after its engine is
// made: images.Builds stands for it until then.
func WithImageBuilds(b ImageBuilds) Option { return func(e *Engine) { e.imageBuilds = b } }

// imageBuild returns the state of lang's image in the background build and
// its detail (see ImageBuilds.ImageState); "" when runs need not wait.
func (e *Engine) imageBuild(lang languages.Language) (state, detail string) {
	if e.imageBuilds == nil {
		return "", ""
	}
	return e.imageBuilds.ImageState(e.reg.ImageOf(lang).Tag)
}

// imageBuilt hears that image (a tag) has just been built: the versions
// and packages recorded for its languages are read again, and their warm
// pools start.
func (e *Engine) imageBuilt(image string) {
	for _, l := range e.reg.Languages() {
		if e.reg.ImageOf(l).Tag != image {
			continue
		}
		e.versionsMu.Lock()
		delete(e.versions, l.Name)
		delete(e.packages, l.Name)
		e.versionsMu.Unlock()
		if e.pool != nil {
			e.pool.Wake(l.Name)
		}
	}
}

// imageWait is how long a run waits for its image's background build
// (images.wait_seconds), before its own timeout starts.
func (e *Engine) imageWait() time.Duration {
	return time.Duration(e.cfg.Images.WaitSeconds) * time.Second
}

// awaitImage waits, when img (the image lang's run needs) is being built
// in the background, until it is built, at most ImageWait; report, if set,
// hears each change ("building image for rust: step 4/9"). An image the
// builder is not making returns at once: a missing one fails as before, at
// its sandbox's creation, with image_missing.
func (e *Engine) awaitImage(ctx context.Context, img languages.Image, lang languages.Language, report func(string)) error {
	b := e.imageBuilds
	if b == nil {
		return nil
	}
	state, _ := b.ImageState(img.Tag)
	switch {
	case state == "":
		return nil
	case state == ImageFailed && e.backend.CheckImage(ctx, img.Tag) == nil:
		// Built by hand since its background build failed.
		if e.pool != nil && e.pool.Held(lang.Name) {
			e.imageBuilt(img.Tag)
		}
		return nil
	}
	wait := e.imageWait()
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var last string
	err := b.WaitImage(wctx, img.Tag, func(state, detail string) {
		last = state + ": " + detail
		if report == nil {
			return
		}
		if state == ImageQueued {
			report(fmt.Sprintf("image for %s queued: %s", lang.Name, detail))
		} else {
			report(fmt.Sprintf("building image for %s: %s", lang.Name, detail))
		}
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return &Error{Code: CodeBusy, Err: ctx.Err(), Message: fmt.Sprintf(
			"the request ended while image %s, which %s runs need, was being built (%s): %v", img.Tag, lang.Name, last, ctx.Err())}
	case errors.Is(err, context.DeadlineExceeded):
		return &Error{Code: CodeBusy, Err: err, Message: fmt.Sprintf(
			"image %s, which %s runs need, is still being built in the background (%s) after %s (images.wait_seconds); retry in a few minutes, or see list_languages for its progress",
			img.Tag, lang.Name, last, wait)}
	default:
		all := "`make images`"
		if img.OnDemand {
			all = "`mcp-code-runner images build --all`"
		}
		return &Error{Code: CodeImageMissing, Err: err, Message: fmt.Sprintf(
			"%v; image %s, which %s runs need, is not built on this host: see the server's log (and images.build_log) for the cause, fix it, build it with `mcp-code-runner images build %s` (or %s), then retry",
			err, img.Tag, lang.Name, img.Name, all)}
	}
}
