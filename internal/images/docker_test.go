//go:build !fast

package images

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// TestBuildAll builds every image but the optional variants, on-demand ones
// included (or finds it up to date), on the real daemon and checks that each
// language's runtime version is recorded.
func TestBuildAll(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cli := requireDocker(ctx, t)
	reg := languages.Builtin()
	var log strings.Builder
	if err := Build(ctx, cli, reg, All(reg), Options{Log: &log}); err != nil {
		t.Fatalf("Build: %v\n%s", err, log.String())
	}
	sts, err := Status(ctx, cli, reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range sts {
		if st.Optional {
			continue // built only when asked for
		}
		if !st.Present || !st.UpToDate || st.Size <= 0 {
			t.Errorf("image %s after Build: present %v, up to date %v, size %d", st.Tag, st.Present, st.UpToDate, st.Size)
		}
		for _, l := range reg.LanguagesOf(st.Name) {
			if st.RuntimeVersions[l.Name] == "" {
				t.Errorf("image %s has no runtime version for %s", st.Tag, l.Name)
			}
		}
	}
	versions := RuntimeVersions(ctx, cli, reg)
	for _, name := range reg.Names() {
		if versions[name] == "" {
			t.Errorf("RuntimeVersions has no version for %s: %v", name, versions)
		}
	}
	t.Logf("runtime versions: %v", versions)
}

// requireDocker returns a client of the real daemon; without one the test
// fails under CI=true and is skipped otherwise.
func requireDocker(ctx context.Context, t *testing.T) *client.Client {
	t.Helper()
	cli, err := dockerengine.NewClient("")
	if err == nil {
		err = dockerengine.Ping(ctx, cli)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// TestTheVersionCheckRunsInAThrowawayContainer runs bash's version command
// the way a build checks a new image, in the base image on the daemon that
// DOCKER_HOST names: Docker attaches before the start, Podman reads the
// engine's log after the exit (test-engines builds through Podman too).
func TestTheVersionCheckRunsInAThrowawayContainer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := requireDocker(ctx, t)
	reg := languages.Builtin()
	bash, _ := reg.Lookup("bash")
	img := reg.ImageOf(bash).Tag
	if _, err := cli.ImageInspect(ctx, img); err != nil {
		t.Fatalf("%s: %v (make images builds it)", img, err)
	}
	daemon, err := DaemonPlatform(ctx, cli)
	if err != nil {
		t.Fatal(err)
	}
	measure, err := newProbe(ctx, cli, daemon, daemon)
	if err != nil {
		t.Fatal(err)
	}
	got, err := measure.version(ctx, img, bash)
	if err != nil || !strings.HasPrefix(got, "GNU bash") {
		t.Fatalf("version: %q, %v; want GNU bash's version", got, err)
	}
	fail := bash
	fail.Version = []string{"bash", "-c", "echo broken >&2; exit 3"}
	if _, err := measure.version(ctx, img, fail); err == nil || !strings.Contains(err.Error(), "exited with status 3: broken") {
		t.Fatalf("a failing version command: %v, want its status and output", err)
	}
	// A command that outgrows the limit is named as killed for memory, with
	// the limit and the registry field that raises it (whether or not the
	// engine has reported the OOM kill by the time it has the exit). Bash's own string
	// doubling grows past 512 MB in a few seconds; it stops at 1 GiB, so that
	// an engine that does not enforce the limit fails the test, not the host.
	greedy := bash
	greedy.Version = []string{"bash", "-c", "echo growing >&2; s=x; for i in $(seq 30); do s=$s$s; done; echo grew to ${#s}"}
	_, err = measure.version(ctx, img, greedy)
	if err == nil || !strings.Contains(err.Error(), "was killed") || !strings.Contains(err.Error(), "512 MB") || !strings.Contains(err.Error(), "memory_mb") || !strings.Contains(err.Error(), "growing") {
		t.Fatalf("a version command over its memory: %v, want it named as killed for memory, with the limit, the fix and its output", err)
	}
}
