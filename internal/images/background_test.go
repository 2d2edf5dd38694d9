package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// stepper is an injected BuildFunc: each build announces itself, then
// writes the lines and returns the result the test sends it.
type stepper struct {
	mu      sync.Mutex
	started []string
	startC  chan string
	lines   map[string]chan string
	results map[string]chan error
}

func newStepper(reg *languages.Registry) *stepper {
	s := &stepper{startC: make(chan string, 32), lines: map[string]chan string{}, results: map[string]chan error{}}
	for _, img := range reg.Images() {
		s.lines[img.Name] = make(chan string, 16)
		s.results[img.Name] = make(chan error, 1)
	}
	return s
}

func (s *stepper) build(ctx context.Context, image string, log io.Writer) error {
	s.mu.Lock()
	s.started = append(s.started, image)
	s.mu.Unlock()
	s.startC <- image
	for {
		select {
		case l := <-s.lines[image]:
			fmt.Fprintln(log, l)
		case err := <-s.results[image]:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *stepper) builtInOrder() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.started)
}

// expectStart waits for the build of image to start.
func (s *stepper) expectStart(t *testing.T, image string) {
	t.Helper()
	select {
	case got := <-s.startC:
		if got != image {
			t.Fatalf("build of %s started, want %s", got, image)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("build of %s did not start", image)
	}
}

// waitState waits until the image of tag reaches want (with detail, when
// detail is not "").
func waitState(t *testing.T, b *Background, tag string, want BuildState, detail string) ImageBuild {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b.mu.Lock()
		changed := b.changed
		b.mu.Unlock()
		ib, _ := b.Build(tag)
		if ib.State == want && (detail == "" || ib.Detail() == detail) {
			return ib
		}
		select {
		case <-changed:
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s: state %s (%s), want %s (%s)", tag, ib.State, ib.Detail(), want, detail)
		}
	}
}

func tagOf(reg *languages.Registry, name string) string {
	img, _ := reg.Image(name)
	return img.Tag
}

func TestBackgroundBuildsMissingImagesOneAtATimeThenOutOfDateOnes(t *testing.T) {
	reg := languages.Builtin()
	s := newStepper(reg)
	var builtMu sync.Mutex
	var built []string
	b := StartBackground(t.Context(), reg, []Target{
		{Name: "go", Present: true}, {Name: "functional"}, {Name: "native"},
	}, BackgroundOptions{Build: s.build, OnBuilt: func(ib ImageBuild) {
		builtMu.Lock()
		built = append(built, ib.Name)
		builtMu.Unlock()
	}})

	s.expectStart(t, "native")
	if ib, _ := b.Build(tagOf(reg, "functional")); ib.State != StateQueued || ib.Detail() != "1 image builds first" {
		t.Errorf("functional while native builds: %s (%s), want queued (1 image builds first)", ib.State, ib.Detail())
	}
	if state, _ := b.ImageState(tagOf(reg, "go")); state != "" {
		t.Errorf("ImageState of go, out of date but present: %q, want \"\" (runs use the present image)", state)
	}
	s.lines["native"] <- "Step 1/9 : ARG BASE"
	s.lines["native"] <- "Step 4/9 : RUN apt-get install -y gcc"
	waitState(t, b, tagOf(reg, "native"), StateBuilding, "step 4/9")
	if state, detail := b.ImageState(tagOf(reg, "native")); state != "building" || detail != "step 4/9" {
		t.Errorf("ImageState of native: %q %q, want building, step 4/9", state, detail)
	}
	s.results["native"] <- nil
	waitState(t, b, tagOf(reg, "native"), StateAvailable, "")

	s.expectStart(t, "functional")
	s.results["functional"] <- nil
	s.expectStart(t, "go") // present ones last
	s.results["go"] <- nil
	<-b.Done()

	if got, want := s.builtInOrder(), []string{"native", "functional", "go"}; !slices.Equal(got, want) {
		t.Errorf("built %v, want %v (missing first, parents before children)", got, want)
	}
	builtMu.Lock()
	defer builtMu.Unlock()
	if want := []string{"native", "functional", "go"}; !slices.Equal(built, want) {
		t.Errorf("OnBuilt saw %v, want %v", built, want)
	}
	for _, ib := range b.Builds() {
		if ib.State != StateAvailable || !ib.Present {
			t.Errorf("%s at the end: %s, present %v; want available", ib.Name, ib.State, ib.Present)
		}
	}
}

func TestBackgroundFailedParentFailsItsChildrenWithoutBuildingThem(t *testing.T) {
	reg := languages.Builtin()
	s := newStepper(reg)
	b := StartBackground(t.Context(), reg, []Target{{Name: "native"}, {Name: "functional"}, {Name: "scripting"}}, BackgroundOptions{Build: s.build})
	s.expectStart(t, "native")
	s.results["native"] <- errors.New("apt-get: unable to fetch gcc-14")
	s.expectStart(t, "scripting")
	s.results["scripting"] <- nil
	<-b.Done()

	if got := s.builtInOrder(); slices.Contains(got, "functional") {
		t.Errorf("built %v: functional builds on the failed native and must not be built", got)
	}
	nat, _ := b.Build(tagOf(reg, "native"))
	fun, _ := b.Build(tagOf(reg, "functional"))
	if nat.State != StateFailed || fun.State != StateFailed {
		t.Fatalf("native %s, functional %s; want both failed", nat.State, fun.State)
	}
	if state, detail := b.ImageState(tagOf(reg, "functional")); state != "failed" || detail == "" {
		t.Errorf("ImageState of functional: %q %q, want failed with the reason", state, detail)
	}
	err := b.WaitImage(t.Context(), tagOf(reg, "functional"), nil)
	be, ok := errors.AsType[*BuildError](err)
	if !ok || be.Name != "functional" {
		t.Fatalf("WaitImage(functional) = %v, want a *BuildError of functional", err)
	}
	for _, want := range []string{tagOf(reg, "functional"), tagOf(reg, "native"), "unable to fetch gcc-14"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

func TestBackgroundWaitReportsProgressUntilBuilt(t *testing.T) {
	reg := languages.Builtin()
	s := newStepper(reg)
	built := make(chan struct{})
	b := StartBackground(t.Context(), reg, []Target{{Name: "mono"}, {Name: "r"}}, BackgroundOptions{Build: s.build,
		OnBuilt: func(ib ImageBuild) {
			if ib.Name == "r" {
				close(built)
			}
		}})
	var mu sync.Mutex
	var seen []string
	// The waiter is level-triggered: it reports the state it finds when it
	// wakes, so the build goes on only once the waiter has reported step 2/3.
	sawStep := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- b.WaitImage(t.Context(), tagOf(reg, "r"), func(state, detail string) {
			mu.Lock()
			seen = append(seen, state+" "+detail)
			mu.Unlock()
			if state+" "+detail == "building step 2/3" {
				close(sawStep)
			}
		})
	}()
	s.expectStart(t, "mono")
	s.results["mono"] <- nil
	s.expectStart(t, "r")
	s.lines["r"] <- "Step 2/3 : RUN apt-get install -y r-base"
	select {
	case <-sawStep:
	case <-time.After(10 * time.Second):
		mu.Lock()
		t.Fatalf("the waiter reported %q and never \"building step 2/3\"", seen)
	}
	s.results["r"] <- nil
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitImage: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("WaitImage did not return once the image was built")
	}
	select {
	case <-built:
	default:
		t.Error("WaitImage returned before OnBuilt ran")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) == 0 || !slices.Contains(seen, "building step 2/3") {
		t.Errorf("progress %q, want it to include \"building step 2/3\"", seen)
	}
	if !strings.HasPrefix(seen[0], "queued ") && !strings.HasPrefix(seen[0], "building ") {
		t.Errorf("first progress %q, want the queued state (or the build under way)", seen[0])
	}
}

func TestBackgroundWaitEndsWithItsContext(t *testing.T) {
	reg := languages.Builtin()
	s := newStepper(reg)
	b := StartBackground(t.Context(), reg, []Target{{Name: "r"}}, BackgroundOptions{Build: s.build})
	s.expectStart(t, "r")
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := b.WaitImage(ctx, tagOf(reg, "r"), nil); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitImage with an ended context = %v, want context.Canceled", err)
	}
	if err := b.WaitImage(t.Context(), "mcp-code-runner/not-scheduled:1", nil); err != nil {
		t.Errorf("WaitImage of an image not scheduled = %v, want nil at once", err)
	}
	if state, _ := b.ImageState("mcp-code-runner/not-scheduled:1"); state != "" {
		t.Errorf("ImageState of an image not scheduled = %q, want \"\"", state)
	}
	s.results["r"] <- nil
	<-b.Done()
}

func TestBackgroundStopsWithItsContextAndFailsWhatIsLeft(t *testing.T) {
	reg := languages.Builtin()
	s := newStepper(reg)
	ctx, cancel := context.WithCancel(t.Context())
	b := StartBackground(ctx, reg, []Target{{Name: "r"}, {Name: "scripting"}}, BackgroundOptions{Build: s.build})
	s.expectStart(t, "r")
	cancel()
	<-b.Done()
	for _, name := range []string{"r", "scripting"} {
		if ib, _ := b.Build(tagOf(reg, name)); ib.State != StateFailed || !errors.Is(ib.Err, context.Canceled) {
			t.Errorf("%s after the stop: %s (%v), want failed with context.Canceled", name, ib.State, ib.Err)
		}
	}
	if got := s.builtInOrder(); slices.Contains(got, "scripting") {
		t.Errorf("built %v after the stop", got)
	}
}
