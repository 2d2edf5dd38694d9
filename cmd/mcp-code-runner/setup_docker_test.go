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
	b, bin := bashAndPythonBinary(t)
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

// TestRunPrintsOnlyTheProgramsOutputAndExitsWithItsCode runs the built
// binary's `run` against the real daemon: stdout is the program's stdout and
// nothing else, stderr the program's stderr (the server's log only with -v),
// and the exit code the program's.
func TestRunPrintsOnlyTheProgramsOutputAndExitsWithItsCode(t *testing.T) {
	_, bin := bashAndPythonBinary(t)
	for _, tc := range []struct {
		name        string
		args        []string
		code        string
		wantStdout  string
		wantCode    int
		wantStderr  string // a part of stderr, when not ""
		wantLogLine bool
	}{
		{name: "a program that succeeds", args: []string{"-l", "bash"}, code: "echo hello", wantStdout: "hello\n"},
		{name: "its own exit code", args: []string{"-l", "bash"}, code: "echo out; echo err >&2; exit 3", wantStdout: "out\n", wantCode: 3, wantStderr: "err\n"},
		{name: "a runtime error's exit code", args: []string{"-l", "python"}, code: "print('before')\nraise SystemExit(7)", wantStdout: "before\n", wantCode: 7},
		{name: "a syntax error", args: []string{"-l", "python"}, code: "print(", wantCode: 1, wantStderr: "SyntaxError"},
		{name: "a timeout is the kill's code, said on stderr", args: []string{"-l", "bash", "-t", "1"}, code: "echo started; sleep 30", wantStdout: "started\n", wantCode: 137, wantStderr: "timeout"},
		{name: "arguments after --", args: []string{"-l", "bash", "-", "--", "a b", "c"}, code: `echo "$# $1"`, wantStdout: "2 a b\n"},
		{name: "the server's log with -v, still off stdout", args: []string{"-l", "bash", "-v"}, code: "echo hi", wantStdout: "hi\n", wantLogLine: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.CommandContext(t.Context(), bin, append([]string{"run"}, tc.args...)...)
			cmd.Stdin = strings.NewReader(tc.code)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			code := 0
			if exit := (*exec.ExitError)(nil); errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatalf("run: %v\n%s", err, stderr.String())
			}
			if string(out) != tc.wantStdout || code != tc.wantCode {
				t.Errorf("stdout %q, exit code %d; want %q, %d (stderr %q)", out, code, tc.wantStdout, tc.wantCode, stderr.String())
			}
			if tc.wantStderr != "" && !strings.Contains(stderr.String(), tc.wantStderr) {
				t.Errorf("stderr %q lacks %q", stderr.String(), tc.wantStderr)
			}
			if hasLog := strings.Contains(stderr.String(), "level="); hasLog != tc.wantLogLine {
				t.Errorf("a log line on stderr: %v, want %v:\n%s", hasLog, tc.wantLogLine, stderr.String())
			}
		})
	}
}

// bashAndPythonBinary is the real Docker backend, with the bash and python
// images present, and the built server binary.
func bashAndPythonBinary(t *testing.T) (*docker.Backend, string) {
	t.Helper()
	b := testutil.Backend(t)
	reg := languages.Builtin()
	for _, l := range []string{"bash", "python"} {
		testutil.RequireImage(t, b, reg, l)
	}
	return b, testutil.ServerBinary(t)
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
