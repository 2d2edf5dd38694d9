//go:build !fast

package main

import (
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/client"

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
	left, err := b.Client().ContainerList(context.Background(), client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(cmd.Process.Pid)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(left.Items); n > 0 {
		t.Errorf("setup left %d sandbox container(s) behind", n)
	}
}
