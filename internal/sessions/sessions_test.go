package sessions_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// fakeManager returns a manager on the fake backend (the real agent in
// this process, no Docker), for the logic of sessions.
func fakeManager(t *testing.T, cfg *config.Config) *sessions.Manager {
	t.Helper()
	e, _ := testutil.FakeEngine(t, cfg)
	m := sessions.NewManager(e)
	t.Cleanup(m.Shutdown)
	return m
}

// dockerManager makes a manager on Docker; docker_test.go sets it, and
// the fast tier (-tags fast) has no Docker tests.
var dockerManager func(t *testing.T) *sessions.Manager

// onBothBackends runs test on the fake backend and, outside the fast tier,
// on Docker.
func onBothBackends(t *testing.T, test func(t *testing.T, newManager func(t *testing.T) *sessions.Manager)) {
	t.Run("fake", func(t *testing.T) { test(t, func(t *testing.T) *sessions.Manager { return fakeManager(t, nil) }) })
	if dockerManager != nil {
		t.Run("docker", func(t *testing.T) { test(t, dockerManager) })
	}
}

func run(t *testing.T, m *sessions.Manager, id, code string) *engine.Result {
	t.Helper()
	r, err := m.Run(context.Background(), engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
	if err != nil {
		t.Fatalf("run %q: %v", code, err)
	}
	return r
}

func create(t *testing.T, m *sessions.Manager, lang string, idle int) string {
	t.Helper()
	info, err := m.Create(context.Background(), lang, idle, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return info.SessionID
}

func TestPythonSessionKeepsState(t *testing.T) {
	onBothBackends(t, testPythonSessionKeepsState)
}

func testPythonSessionKeepsState(t *testing.T, newManager func(t *testing.T) *sessions.Manager) {
	m := newManager(t)
	id := create(t, m, "python", 0)
	r := run(t, m, id, "import math\nx = 41\nprint('set')")
	if r.Status != engine.StatusOK || r.Stdout != "set\n" || !r.KernelRestarted {
		t.Fatalf("first call: %+v", r)
	}
	r = run(t, m, id, "x + 1")
	if r.Value != "42" || r.KernelRestarted {
		t.Fatalf("variable lost: %+v", r)
	}
	r = run(t, m, id, "open('notes.txt', 'w').write('kept'); math.floor(2.7)")
	if r.Value != "2" {
		t.Fatalf("import lost: %+v", r)
	}
	r = run(t, m, id, "print(open('notes.txt').read())")
	if r.Stdout != "kept\n" {
		t.Fatalf("file lost: %+v", r)
	}
	r = run(t, m, id, "1/0")
	if r.Status != engine.StatusError || !strings.Contains(r.Stderr, "ZeroDivisionError") {
		t.Fatalf("exception: %+v", r)
	}
	if r = run(t, m, id, "x"); r.Value != "41" {
		t.Fatalf("an exception lost the state: %+v", r)
	}
	// A cell over its time limit loses the interpreter; the next call says so.
	r, err := m.Run(context.Background(), engine.Request{SessionID: id, Code: "while True: pass", TimeoutSeconds: 1}, engine.RunOptions{})
	if err != nil || !r.TimedOut {
		t.Fatalf("timeout: %v %+v", err, r)
	}
	r = run(t, m, id, "print(open('notes.txt').read()); 'x' in globals()")
	if !r.KernelRestarted || r.Value != "False" || r.Stdout != "kept\n" {
		t.Fatalf("after the timeout: %+v", r)
	}
}

func TestSessionLimits(t *testing.T) {
	cfg := config.Default()
	cfg.Sessions.MaxSessions = 2
	m := fakeManager(t, &cfg)
	ctx := context.Background()
	short := create(t, m, "bash", 1)
	create(t, m, "bash", 0)
	if _, err := m.Create(ctx, "bash", 0, sessions.Options{}); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("cap: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, s := range m.List(ctx) {
			if s.SessionID == short {
				return false
			}
		}
		return true
	}, "the session idle for its 1 s timeout to expire")
	if _, err := m.Run(ctx, engine.Request{SessionID: short, Code: "true"}, engine.RunOptions{}); err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Fatalf("idle session still there: %v", err)
	}
	if _, err := m.Create(ctx, "bash", 0, sessions.Options{}); err != nil {
		t.Fatalf("a slot should be free after expiry: %v", err)
	}
	if _, err := m.Create(ctx, "bash", 999999, sessions.Options{}); err == nil {
		t.Error("idle timeout above the maximum accepted")
	}
}

func TestSessionCancel(t *testing.T) { onBothBackends(t, testSessionCancel) }

func testSessionCancel(t *testing.T, newManager func(t *testing.T) *sessions.Manager) {
	m := newManager(t)
	id := create(t, m, "python", 0)
	run(t, m, id, "y = 5")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := time.Now()
	r, err := m.Run(ctx, engine.Request{SessionID: id, Code: "import time; print('sleeping', flush=True); time.sleep(60)"}, engine.RunOptions{
		OnChunk: func(c sandbox.Chunk) {
			if strings.Contains(string(c.Data), "sleeping") {
				cancel()
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusKilled || time.Since(start) > 20*time.Second {
		t.Fatalf("cancel: %+v after %s", r, time.Since(start))
	}
	if r := run(t, m, id, "print('alive')"); r.Stdout != "alive\n" {
		t.Fatalf("session unusable after cancel: %+v", r)
	}
}

// TestInstallingNothingIntoASessionWithoutAPackageManagerIsRefused: a
// session of a language that has no package manager, asked to install an
// empty list, answers with an invalid-request error (it once returned no
// installation and no error, and the caller dereferenced it).
func TestInstallingNothingIntoASessionWithoutAPackageManagerIsRefused(t *testing.T) {
	m := fakeManager(t, nil)
	id := create(t, m, "bash", 60)
	for _, specs := range [][]string{nil, {}} {
		_, err := m.InstallPackages(context.Background(), id, specs)
		var ee *engine.Error
		if !errors.As(err, &ee) || ee.Code != engine.CodeInvalid {
			t.Errorf("InstallPackages(%q) = %v; want an invalid-request error", specs, err)
		}
	}
}
