package engine_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// heldBuild is an injected image build that writes its steps and ends
// when the test says.
type heldBuild struct {
	steps  chan string
	result chan error
}

func newHeldBuild() *heldBuild {
	return &heldBuild{steps: make(chan string, 8), result: make(chan error, 1)}
}

func (h *heldBuild) build(ctx context.Context, _ string, log io.Writer) error {
	for {
		select {
		case s := <-h.steps:
			fmt.Fprintln(log, s)
		case err := <-h.result:
			return err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// buildingEngine is an engine on the fake backend with cfg (Default()
// when nil) whose runs wait for a background build of the bash image,
// which h makes.
func buildingEngine(t *testing.T, cfg *config.Config, h *heldBuild) (*engine.Engine, *fake.Backend, *images.Background) {
	builds := &images.Builds{}
	e, b := testutil.FakeEngine(t, cfg, engine.WithImageBuilds(builds))
	reg := languages.Builtin()
	bash, _ := reg.Lookup("bash")
	bg := builds.Start(t.Context(), reg, []images.Target{{Name: bash.Image}},
		images.BackgroundOptions{Build: h.build})
	return e, b, bg
}

func TestRunWaitsForItsImageWithProgressThenRuns(t *testing.T) {
	cfg := config.Default()
	cfg.Pool.Sizes = []string{"bash=1"}
	h := newHeldBuild()
	e, _, _ := buildingEngine(t, &cfg, h)
	e.StartPool()
	bash, _ := e.Registry().Lookup("bash")
	if state := e.Runtime(t.Context(), bash).ImageState; state != engine.ImageBuilding && state != engine.ImageQueued {
		t.Fatalf("the image state of bash = %q, want building or queued", state)
	}

	var mu sync.Mutex
	var heard []string
	done := make(chan error, 1)
	var res *engine.Result
	go func() {
		var err error
		res, err = e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo built"}, engine.RunOptions{OnImage: func(s string) {
			mu.Lock()
			heard = append(heard, s)
			mu.Unlock()
		}})
		done <- err
	}()
	h.steps <- "Step 4/9 : RUN apt-get install -y bash"
	testutil.Eventually(t, 10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(heard) > 0 && heard[len(heard)-1] == "building image for bash: step 4/9"
	}, "the run to hear the build's step")
	select {
	case err := <-done:
		t.Fatalf("the run ended (%v) before its image was built", err)
	default:
	}
	h.result <- nil
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end once its image was built")
	}
	if res.Status != engine.StatusOK || res.Stdout != "built\n" {
		t.Errorf("got %s %q, want ok \"built\\n\"", res.Status, res.Stdout)
	}
	if state := e.Runtime(t.Context(), bash).ImageState; state != "" {
		t.Errorf("the image state of bash after the build = %q, want \"\"", state)
	}
	// The warm pool, held while its image was building, fills once it is built.
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, s := range e.PoolStats() {
			if s.Language == "bash" && s.Idle >= 1 {
				return true
			}
		}
		return false
	}, "the bash pool to fill")
}

func TestRunWhoseImageBuildFailedSaysWhyAndWhatToDo(t *testing.T) {
	h := newHeldBuild()
	e, b, bg := buildingEngine(t, nil, h)
	reg := e.Registry()
	bash, _ := reg.Lookup("bash")
	b.MissingImages = map[string]bool{reg.ImageOf(bash).Tag: true}
	h.result <- errors.New("apt-get: unable to fetch bash")
	<-bg.Done()
	_, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "true"}, engine.RunOptions{})
	if engine.CodeOf(err) != engine.CodeImageMissing {
		t.Fatalf("got %v (%s), want image_missing", err, engine.CodeOf(err))
	}
	for _, want := range []string{"background build", "unable to fetch bash", "mcp-code-runner images build base"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if rt := e.Runtime(t.Context(), bash); rt.ImageState != engine.ImageFailed || !strings.Contains(rt.ImageDetail, "unable to fetch bash") {
		t.Errorf("the image state of bash = %q %q, want failed with the reason", rt.ImageState, rt.ImageDetail)
	}
}

func TestRunWaitsNoLongerThanTheImageWaitCap(t *testing.T) {
	cfg := config.Default()
	cfg.Images.WaitSeconds = 1
	h := newHeldBuild()
	e, _, _ := buildingEngine(t, &cfg, h)
	t.Cleanup(func() { h.result <- nil })
	start := time.Now()
	_, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "true"}, engine.RunOptions{})
	if engine.CodeOf(err) != engine.CodeBusy || !strings.Contains(err.Error(), "images.wait_seconds") {
		t.Fatalf("got %v (%s), want busy naming images.wait_seconds", err, engine.CodeOf(err))
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("the run waited %s, past its 1 s cap", took)
	}
}
