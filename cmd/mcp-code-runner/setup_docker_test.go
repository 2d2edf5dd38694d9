//go:build !fast

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestSetupSkipImagesRunsASandboxEndToEnd runs the built binary's setup
// against the real daemon: the engine check, a hello world in bash and
// python in real sandboxes, and the client configuration for this OS; no
// container is left behind.
func TestSetupSkipImagesRunsASandboxEndToEnd(t *testing.T) {
	b := testutil.Backend(t)
	reg := languages.Builtin()
	for _, l := range []string{"bash", "python"} {
		testutil.RequireImage(t, b, reg, l)
	}
	bin := testutil.ServerBinary(t)
	home := t.TempDir()
	cmd := exec.CommandContext(t.Context(), bin, "setup", "--skip-images", "--http", "127.0.0.1:9123")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME=")
	cmd.Stdin = strings.NewReader("") // not a terminal: setup never asks
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("setup: %v\n%s", err, out)
	}
	for _, w := range []string{
		"[1/4] the container engine\nok    Docker ",
		"skipped (--skip-images)",
		"ok    test run (bash) in a hardened sandbox: uid=",
		"ok    test run (python) in a hardened sandbox: uid ",
		"add to " + home + "/.config/Claude/claude_desktop_config.json",
		`"command": "` + bin + `"`,
		"claude mcp add --transport http code-runner http://127.0.0.1:9123/mcp",
	} {
		if !strings.Contains(string(out), w) {
			t.Errorf("setup's output lacks %q:\n%s", w, out)
		}
	}
	noContainersOf(t, b, "setup", cmd.Process.Pid)
}

// TestRunLeavesNoSandboxBehind runs the built binary's `run` against the
// real daemon: the program's output and exit code come back, and the
// sandbox, removed after the answer, is gone before the process exits.
func TestRunLeavesNoSandboxBehind(t *testing.T) {
	b := testutil.Backend(t)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	cmd := exec.CommandContext(t.Context(), testutil.ServerBinary(t), "run", "-l", "bash", "-")
	cmd.Stdin = strings.NewReader("echo from-the-sandbox; exit 3\n")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 3 || string(out) != "from-the-sandbox\n" {
		t.Fatalf("run: %v, stdout %q: want exit code 3 and the program's output", err, out)
	}
	noContainersOf(t, b, "run", cmd.Process.Pid)
}

// noContainersOf fails the test if a container made by the process pid
// (the command what) is still there.
func noContainersOf(t *testing.T, b *docker.Backend, what string, pid int) {
	t.Helper()
	left, err := dockerengine.ListContainers(context.Background(), b.Client(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(pid)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(left.Items); n > 0 {
		t.Errorf("%s left %d sandbox container(s) behind", what, n)
	}
}
