//go:build !fast

package docker_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestSandboxesRunUnderTheChosenRuntime creates sandboxes under each way of
// naming a runtime and asks the daemon which runtime each container got.
// scripts/ensure-docker.sh registers crun, so under CI=true its absence is
// a failure.
func TestSandboxesRunUnderTheChosenRuntime(t *testing.T) {
	cli := testutil.RequireDocker(t)
	requireRuntime(t, cli, "crun", os.Getenv("CI") == "true", "scripts/ensure-docker.sh")
	reg := languages.Builtin()
	lang, _ := reg.Lookup("bash")
	t.Cleanup(func() { testutil.NoLeftovers(t, cli) })
	for _, c := range []struct {
		configured, want string
	}{
		{"", "crun"},
		{"auto", "crun"},
		{"runc", "runc"},
		{"crun", "crun"},
	} {
		t.Run("configured "+described(c.configured)+" runs under "+c.want, func(t *testing.T) {
			b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t), Runtime: c.configured})
			if err != nil {
				t.Fatal(err)
			}
			testutil.RequireImage(t, b, reg, "bash")
			if err := b.Check(context.Background()); err != nil {
				t.Fatal(err)
			}
			e := engine.New(config.Default(), reg, b, nil)
			ctx := context.Background()
			sb, err := b.Create(ctx, e.Template(lang))
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			got, err := cli.ContainerInspect(ctx, sb.ID(), client.ContainerInspectOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if rt := got.Container.HostConfig.Runtime; rt != c.want {
				t.Fatalf("container runtime %q, want %q", rt, c.want)
			}
			r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "grep -E '^(CapEff|NoNewPrivs)' /proc/self/status; touch /x 2>/dev/null || echo read-only"}, engine.RunOptions{})
			if err != nil || r.Status != engine.StatusOK || !strings.Contains(r.Stdout, "CapEff:\t0000000000000000") || !strings.Contains(r.Stdout, "NoNewPrivs:\t1") || !strings.Contains(r.Stdout, "read-only") {
				t.Fatalf("hardened run under %s: %v %+v", c.want, err, r)
			}
		})
	}

	t.Run("a runtime the daemon lacks is refused with the ones it has, and makes nothing", func(t *testing.T) {
		b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t), Runtime: "no-such-runtime"})
		if err != nil {
			t.Fatal(err)
		}
		err = b.Check(context.Background())
		// Daemons differ in which containerd shim names they list, so the
		// check is that both runtimes appear, not where.
		if !errors.Is(err, docker.ErrRuntimeMissing) || !strings.Contains(err.Error(), "crun") || !strings.Contains(err.Error(), "runc") {
			t.Fatalf("Check: %v, want ErrRuntimeMissing naming crun and runc", err)
		}
		e := engine.New(config.Default(), reg, b, nil)
		if _, err := b.Create(context.Background(), e.Template(lang)); !errors.Is(err, docker.ErrRuntimeMissing) {
			t.Fatalf("Create: %v, want ErrRuntimeMissing", err)
		}
	})
}

// described names a configured runtime in a subtest name.
func described(s string) string {
	if s == "" {
		return "nothing"
	}
	return s
}
