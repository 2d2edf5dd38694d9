//go:build !fast

package main

import (
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestRunPrintsOnlyTheProgramsOutputAndExitsWithItsCode runs the built
// binary's `run` against the real daemon: stdout is the program's stdout and
// nothing else, stderr the program's stderr (the server's log only with -v),
// and the exit code the program's.
func TestRunPrintsOnlyTheProgramsOutputAndExitsWithItsCode(t *testing.T) {
	b := testutil.Backend(t)
	reg := languages.Builtin()
	for _, l := range []string{"bash", "python"} {
		testutil.RequireImage(t, b, reg, l)
	}
	bin := testutil.ServerBinary(t)
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
