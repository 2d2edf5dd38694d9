//go:build !fast

package docker_test

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// TestAgentChannel runs a job over each channel an agent can serve on: the
// socket it connects to at boot, and, when it cannot reach the socket (as
// under a daemon in a VM), the attached streams after a Hello frame. The
// socket is gone from the host once the agent is connected, and nothing of
// either sandbox is left behind.
func TestAgentChannel(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	if b.SocketsDir() == "" {
		t.Fatal("a local daemon with the default runtime should get agent sockets")
	}
	lang := mustLang(t, reg, "bash")
	tmpl := eng.Template(lang)
	job := sandbox.Job{Deadline: 30 * time.Second, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte("echo hi; ls -A " + docker.SocketDir + "\n")}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}
	for _, c := range []struct {
		name   string
		broken bool
		want   string
	}{
		{"socket", false, "socket"},
		{"streams when the socket is unreachable", true, "streams"},
	} {
		t.Run(c.name, func(t *testing.T) {
			docker.BreakSockets(c.broken)
			defer docker.BreakSockets(false)
			ctx := context.Background()
			sb, err := b.Create(ctx, tmpl)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			res, err := sb.Exec(ctx, job, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stages) != 1 || res.Stages[0].ExitCode != 0 || string(res.Stages[0].Stdout) != "hi\n" || res.Incomplete {
				t.Fatalf("want hi and nothing else in the socket directory, got %+v (diagnostics %q)", res, res.Diagnostics)
			}
			if got := docker.Channel(sb); got != c.want {
				t.Errorf("served on %s, want %s (diagnostics %q)", got, c.want, res.Diagnostics)
			}
			if c.broken && !strings.Contains(res.Diagnostics, "serving on standard input and output") {
				t.Errorf("the agent should say why it fell back; diagnostics %q", res.Diagnostics)
			}
			// Gone once the channel is settled, either way (the listener
			// of a sandbox that fell back is closed in the background).
			testutil.WaitFor(5*time.Second, func() bool { left, _ := os.ReadDir(b.SocketsDir()); return len(left) == 0 })
			if left, _ := os.ReadDir(b.SocketsDir()); len(left) != 0 {
				t.Errorf("socket directories left on the host: %v", left)
			}
		})
	}
	testutil.NoLeftovers(t, b.Client())
}

// TestJobForAnAgentThatDied sends a job to a sandbox whose agent died
// while it was idle, right after the death, before the daemon reports it:
// Exec must say the sandbox ended before its job (sandbox.ErrDead, which
// lets the engine give the job to another sandbox), not return a run that
// ended unexpectedly. The agent dies after it connected to its socket, or
// right after the sandbox's start, before or after it connected (which one
// depends on the machine's load): either way its job never ran.
func TestJobForAnAgentThatDied(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	reg := languages.Builtin()
	testutil.RequireImage(t, b, reg, "bash")
	for _, c := range []struct {
		name            string
		waitForTheAgent bool
	}{
		{"after its agent connected", true},
		{"right after the start", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			sb, err := b.Create(ctx, eng.Template(mustLang(t, reg, "bash")))
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			ins, err := b.Client().ContainerInspect(ctx, sb.ID(), client.ContainerInspectOptions{})
			if err != nil || ins.Container.State == nil || ins.Container.State.Pid <= 0 {
				t.Fatalf("inspecting the sandbox: %v", err)
			}
			pid := ins.Container.State.Pid
			if _, err := os.Stat("/proc/" + strconv.Itoa(pid)); err != nil {
				testutil.SkipUnlessCI(t, "needs the host's view of the sandbox's processes (root, the daemon's PID namespace): %v", err)
			}
			if c.waitForTheAgent {
				testutil.WaitFor(10*time.Second, func() bool { return docker.Channel(sb) != "unknown" })
			}
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			testutil.WaitProcessGone(pid, 10*time.Second)
			job := sandbox.Job{Deadline: 30 * time.Second, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
				Files:  []wire.File{{Path: "main.sh", Data: []byte("echo hi\n")}},
				Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 120_000}}}}
			res, err := sb.Exec(ctx, job, nil)
			if !errors.Is(err, sandbox.ErrDead) {
				t.Fatalf("want sandbox.ErrDead, got %v (result %+v)", err, res)
			}
		})
	}
}

func TestSocketsUsable(t *testing.T) {
	for _, c := range []struct {
		host, runtime string
		want          bool
	}{
		{"unix:///var/run/docker.sock", "", true},
		{"unix:///var/run/docker.sock", "runc", true},
		{"unix:///run/user/1000/docker.sock", "crun", true},
		{"unix:///var/run/docker.sock", "runsc", false},
		{"unix:///var/run/docker.sock", "runsc-debug", false},
		{"tcp://10.0.0.2:2376", "", false},
		{"ssh://user@host", "", false},
	} {
		if got := docker.SocketsUsable(c.host, c.runtime); got != c.want {
			t.Errorf("socketsUsable(%q, %q) = %v, want %v", c.host, c.runtime, got, c.want)
		}
	}
}
