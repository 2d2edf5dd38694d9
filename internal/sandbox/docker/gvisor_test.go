//go:build !fast

package docker_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestGVisorRuntime runs sandboxes under gVisor (runtime runsc) when the
// daemon has it (scripts/ensure-gvisor.sh); MCR_REQUIRE_RUNSC=1 makes its
// absence a failure.
func TestGVisorRuntime(t *testing.T) {
	cli := testutil.RequireDocker(t)
	requireRuntime(t, cli, "runsc", os.Getenv("MCR_REQUIRE_RUNSC") == "1", "scripts/ensure-gvisor.sh")
	b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t), Runtime: "runsc"})
	if err != nil {
		t.Fatal(err)
	}
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	testutil.RequireImage(t, b, reg, "python")
	e := engine.New(config.Default(), reg, b, nil)
	t.Cleanup(func() { testutil.NoLeftovers(t, cli) })
	ctx := context.Background()
	r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "uname -r; id -u; ls /sys/class/net 2>/dev/null | grep -v '^lo$' | wc -l"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// gVisor's Sentry reports its own kernel version, not the host's; no
	// network interface but loopback exists (with network none, none at all).
	if lines := strings.Split(r.Stdout, "\n"); r.Status != engine.StatusOK || len(lines) < 3 || lines[1] != "10001" || lines[2] != "0" {
		t.Fatalf("under runsc: %+v", r)
	}
	host, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	if strings.HasPrefix(r.Stdout, strings.TrimSpace(string(host))) {
		t.Errorf("the sandbox saw the host kernel %s: not running under gVisor", host)
	}
	start := time.Now()
	r, err = e.Run(ctx, engine.Request{Language: "python", Code: "print('hello, world')"}, engine.RunOptions{})
	if err != nil || r.Stdout != "hello, world\n" {
		t.Fatalf("python under runsc: %v %+v", err, r)
	}
	t.Logf("python hello world under gVisor: %s (run stage %d ms)", time.Since(start), r.DurationMs)
	r, err = e.Run(ctx, engine.Request{Language: "bash", Code: "echo x; sleep 30", TimeoutSeconds: 1}, engine.RunOptions{})
	if err != nil || !r.TimedOut || r.Stdout != "x\n" {
		t.Fatalf("timeout under runsc: %v %+v", err, r)
	}
}

// requireRuntime skips the test when the daemon lacks the OCI runtime name,
// or fails it when required; setup is the script that registers it.
func requireRuntime(t *testing.T, cli *client.Client, name string, required bool, setup string) {
	t.Helper()
	info, err := cli.Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := info.Info.Runtimes[name]; !ok {
		if required {
			t.Fatalf("runtime %s is not registered with Docker (%s registers it)", name, setup)
		}
		t.Skipf("runtime %s not registered; run %s", name, setup)
	}
}
