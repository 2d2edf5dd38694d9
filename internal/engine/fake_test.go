package engine_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// These tests run the engine on the fake backend (the real agent in this
// process, no Docker): the run path's logic. What a real sandbox shows is
// proven in docker_test.go.

func TestRunShapesWhatTheAgentReturns(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.InlineOutputBytes = 64
	e, _ := testutil.FakeEngine(t, &cfg)
	cases := []struct {
		name            string
		req             engine.Request
		status          string
		exit            int
		stdout, stderr  string
		stdoutTruncated bool
	}{
		{"hello", engine.Request{Language: "bash", Code: "echo hello"}, engine.StatusOK, 0, "hello\n", "", false},
		{"exit code", engine.Request{Language: "bash", Code: "echo out; echo err >&2; exit 3"}, engine.StatusError, 3, "out\n", "err\n", false},
		{"stdin and args", engine.Request{Language: "bash", Code: `read -r l; echo "$l|$*"`, Stdin: "in\n", Args: []string{"a b", "c"}},
			engine.StatusOK, 0, "in|a b c\n", "", false},
		{"env and files", engine.Request{Language: "bash", Code: `echo "$GREETING $(cat data/in.txt)"`, Env: map[string]string{"GREETING": "hi"},
			Files: []engine.InputFile{{Path: "data/in.txt", Content: "file"}}}, engine.StatusOK, 0, "hi file\n", "", false},
		{"python", engine.Request{Language: "python", Code: "print(6*7)"}, engine.StatusOK, 0, "42\n", "", false},
		{"timeout", engine.Request{Language: "bash", Code: "echo started; sleep 60", TimeoutSeconds: 1}, engine.StatusTimeout, 137, "started\n", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := e.Run(context.Background(), c.req, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != c.status || r.ExitCode != c.exit || r.Stdout != c.stdout || r.Stderr != c.stderr || r.StdoutTruncated != c.stdoutTruncated {
				t.Errorf("got %s exit %d stdout %q stderr %q truncated %v; want %s exit %d stdout %q stderr %q truncated %v",
					r.Status, r.ExitCode, r.Stdout, r.Stderr, r.StdoutTruncated, c.status, c.exit, c.stdout, c.stderr, c.stdoutTruncated)
			}
		})
	}
}

func TestOutputPastTheInlineCapIsKeptInFull(t *testing.T) {
	cfg := config.Default()
	cfg.Limits.InlineOutputBytes = 100
	e, _ := testutil.FakeEngine(t, &cfg)
	r, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "for i in $(seq 1000); do echo line $i; done"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !r.StdoutTruncated || !strings.HasPrefix(r.Stdout, "line 1\n") || len(r.Stdout) > 200 || r.StdoutURI == "" || r.StdoutBytes != 8893 {
		t.Fatalf("truncated %v, %d bytes inline, uri %q, total %d", r.StdoutTruncated, len(r.Stdout), r.StdoutURI, r.StdoutBytes)
	}
}

func TestRejectedRequestsCreateNoSandbox(t *testing.T) {
	e, b := testutil.FakeEngine(t, nil)
	for name, req := range map[string]engine.Request{
		"unknown language": {Language: "cobol-9000", Code: "x"},
		"empty code":       {Language: "bash"},
		"bad env name":     {Language: "bash", Code: "true", Env: map[string]string{"A-B": "x"}},
		"escaping file":    {Language: "bash", Code: "true", Files: []engine.InputFile{{Path: "../x", Content: "x"}}},
		"session id":       {Language: "bash", Code: "true", SessionID: "s1"},
	} {
		if _, err := e.Run(context.Background(), req, engine.RunOptions{}); engine.CodeOf(err) != engine.CodeInvalid {
			t.Errorf("%s: got %v, want an invalid-argument error", name, err)
		}
	}
	if created, _, _ := b.Counts(); created != 0 {
		t.Errorf("%d sandboxes created for rejected requests", created)
	}
}

func TestCancelKillsTheRunWithItsPartialOutput(t *testing.T) {
	e, _ := testutil.FakeEngine(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo started; sleep 60"}, engine.RunOptions{
		OnChunk: func(c sandbox.Chunk) {
			if strings.Contains(string(c.Data), "started") {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusKilled || r.Stdout != "started\n" {
		t.Errorf("got status %s stdout %q; want killed with partial output", r.Status, r.Stdout)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("cancel took %s to end the run", took)
	}
}

func TestOutOfMemoryShowsInTheStatus(t *testing.T) {
	e, b := testutil.FakeEngine(t, nil)
	r, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo started; sleep 60"}, engine.RunOptions{
		OnChunk: func(sandbox.Chunk) {
			for _, id := range b.Live() {
				b.Kill(id, true)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusOOM {
		t.Errorf("got status %s (%s), want %s", r.Status, r.ExitReason, engine.StatusOOM)
	}
}

func TestBackendFailuresAreExplained(t *testing.T) {
	cases := []struct {
		name     string
		err      error
		code     string
		contains string
	}{
		{"image missing", fmt.Errorf("%w: no image x", sandbox.ErrImageMissing), engine.CodeImageMissing, "images build bash"},
		{"unavailable", fmt.Errorf("%w: start the fake", sandbox.ErrUnavailable), engine.CodeUnavailable, "start the fake"},
		{"other", errors.New("disk on fire"), engine.CodeInternal, "disk on fire"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, b := testutil.FakeEngine(t, nil)
			b.SetBeforeCreate(func(context.Context, sandbox.Template) error { return c.err })
			_, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "true"}, engine.RunOptions{})
			if engine.CodeOf(err) != c.code || !strings.Contains(err.Error(), c.contains) {
				t.Errorf("got %q (%s), want code %s mentioning %q", err, engine.CodeOf(err), c.code, c.contains)
			}
		})
	}
}

// TestRunRetriesOnASandboxThatDiedIdle hands the run a pooled sandbox
// whose agent is gone before the pool noticed: the job goes to another.
func TestRunRetriesOnASandboxThatDiedIdle(t *testing.T) {
	cfg := config.Default()
	cfg.Pool.Size = 0
	cfg.Pool.Sizes = []string{"bash=1"}
	e, b := testutil.FakeEngine(t, &cfg)
	var severed atomic.Bool
	e.StartPool()
	testutil.Eventually(t, 30*time.Second, func() bool { return idle(e, "bash") == 1 }, "a pooled bash sandbox")
	for _, id := range b.Live() {
		severed.Store(b.Sever(id))
	}
	if !severed.Load() {
		t.Fatal("no pooled sandbox to sever")
	}
	r, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo alive"}, engine.RunOptions{})
	if err != nil || r.Stdout != "alive\n" {
		t.Fatalf("run: %v %+v", err, r)
	}
	if s := e.PoolStats()[0]; s.Served != 2 {
		t.Errorf("want the dead sandbox and its replacement served; got %+v", s)
	}
}

func idle(e *engine.Engine, lang string) int {
	for _, s := range e.PoolStats() {
		if s.Language == lang {
			return s.Idle
		}
	}
	return 0
}

// TestInstallerImageMissingNamesTheInstallersImage asks for packages when
// the runtime image is there but the image that installs them is not: the
// error names the installer's image and how to build it, not the runtime's.
func TestInstallerImageMissingNamesTheInstallersImage(t *testing.T) {
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierPackages
	cfg.Packages.CacheDir = t.TempDir()
	e, b := testutil.FakeEngine(t, &cfg)
	installer, _ := languages.Builtin().Image("packages")
	b.MissingImages = map[string]bool{installer.Tag: true}
	_, err := e.Run(context.Background(), engine.Request{Language: "javascript", Code: "1", Packages: []string{"lodash@4"}}, engine.RunOptions{})
	if engine.CodeOf(err) != engine.CodeImageMissing {
		t.Fatalf("got %v (%s), want code %s", err, engine.CodeOf(err), engine.CodeImageMissing)
	}
	for _, want := range []string{installer.Tag, "images build packages", "npm"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	js, _ := languages.Builtin().Lookup("javascript")
	if runtime := languages.Builtin().ImageOf(js).Tag; strings.Contains(err.Error(), runtime) {
		t.Errorf("error %q names the runtime image %s, which is there", err, runtime)
	}
}
