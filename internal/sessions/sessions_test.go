package sessions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func manager(t *testing.T, cfg *config.Config, langs ...string) *sessions.Manager {
	t.Helper()
	e, b := testutil.Engine(t, cfg)
	for _, l := range langs {
		testutil.RequireImage(t, b, languages.Builtin(), l)
	}
	m := sessions.NewManager(e)
	t.Cleanup(func() {
		m.Shutdown()
		testutil.NoLeftovers(t, b.Client())
	})
	return m
}

// fakeManager returns a manager on the fake backend (the real agent in
// this process, no Docker), for the logic of sessions.
func fakeManager(t *testing.T, cfg *config.Config) *sessions.Manager {
	t.Helper()
	e, _ := testutil.FakeEngine(t, cfg)
	m := sessions.NewManager(e)
	t.Cleanup(m.Shutdown)
	return m
}

// onBothBackends runs test on the fake backend and on Docker.
func onBothBackends(t *testing.T, test func(t *testing.T, newManager func(t *testing.T) *sessions.Manager)) {
	t.Run("fake", func(t *testing.T) { test(t, func(t *testing.T) *sessions.Manager { return fakeManager(t, nil) }) })
	t.Run("docker", func(t *testing.T) {
		test(t, func(t *testing.T) *sessions.Manager { return manager(t, nil, "python", "bash") })
	})
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
	info, err := m.Create(context.Background(), lang, idle)
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

func TestJavaScriptSessionKeepsState(t *testing.T) {
	m := manager(t, nil, "javascript")
	id := create(t, m, "js", 0)
	run(t, m, id, "let count = 20; const fs = require('fs'); function twice(n) { return 2 * n }")
	if r := run(t, m, id, "twice(count + 1)"); r.Value != "42" {
		t.Fatalf("state lost: %+v", r)
	}
	// Re-running a declaration, as notebook users do, works.
	if r := run(t, m, id, "let count = 1; count"); r.Value != "1" || r.Status != engine.StatusOK {
		t.Fatalf("redeclaration: %+v", r)
	}
	if r := run(t, m, id, "console.log('out'); Promise.resolve(7)"); r.Value != "7" || r.Stdout != "out\n" {
		t.Fatalf("promise value: %+v", r)
	}
	if r := run(t, m, id, "throw new Error('boom')"); r.Status != engine.StatusError || !strings.Contains(r.Stderr, "boom") {
		t.Fatalf("throw: %+v", r)
	}
}

func TestSessionsAreIsolated(t *testing.T) {
	m := manager(t, nil, "python", "bash")
	a := create(t, m, "python", 0)
	b := create(t, m, "python", 0)
	run(t, m, a, "secret = 'a'\nopen('/workspace/mine.txt','w').write('a')\nopen('/tmp/mine.txt','w').write('a')")
	r := run(t, m, b, "import os\nprint('secret' in globals(), os.path.exists('/workspace/mine.txt'), os.path.exists('/tmp/mine.txt'))")
	if r.Stdout != "False False False\n" {
		t.Fatalf("session b sees session a: %q", r.Stdout)
	}
	// A one-shot run sees nothing either.
	sh := create(t, m, "bash", 0)
	run(t, m, sh, "echo kept > f.txt")
	if r := run(t, m, sh, "cat f.txt"); r.Stdout != "kept\n" {
		t.Fatalf("bash session file: %+v", r)
	}
}

func TestSessionFiles(t *testing.T) {
	m := manager(t, nil, "python")
	id := create(t, m, "python", 0)
	ctx := context.Background()
	blob := make([]byte, 70000)
	for i := range blob {
		blob[i] = byte(i*31 + i/256)
	}
	if err := m.WriteFiles(ctx, id, []engine.InputFile{{Path: "data/blob.bin", Content: base64.StdEncoding.EncodeToString(blob), Encoding: "base64"}}); err != nil {
		t.Fatal(err)
	}
	got, err := m.ReadFile(ctx, id, "data/blob.bin")
	if err != nil || !bytes.Equal(got.Data, blob) {
		t.Fatalf("binary round trip: %v, %d bytes", err, len(got.Data))
	}
	r := run(t, m, id, "import hashlib; hashlib.sha256(open('data/blob.bin','rb').read()).hexdigest()[:8]")
	if r.Value == "" || r.Status != engine.StatusOK {
		t.Fatalf("the run did not see the written file: %+v", r)
	}
	run(t, m, id, "import os; os.symlink('/etc/passwd', 'link.txt'); os.symlink('/', 'rootdir')")
	files, err := m.ListFiles(ctx, id, "")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]string{}
	for _, f := range files {
		types[f.Path] = f.Type
	}
	if types["data"] != "dir" || types["data/blob.bin"] != "file" || types["link.txt"] != "symlink" || types["rootdir"] != "symlink" {
		t.Errorf("list: %+v", files)
	}
	if _, ok := types["rootdir/etc"]; ok {
		t.Error("list_files followed a symlink out of the workspace")
	}
	// Bad input: clear errors, and the session stays usable.
	bad := []struct {
		name string
		err  error
	}{
		{"symlink read", func() error { _, err := m.ReadFile(ctx, id, "link.txt"); return err }()},
		{"path outside", func() error { _, err := m.ReadFile(ctx, id, "../etc/passwd"); return err }()},
		{"absolute path", m.WriteFiles(ctx, id, []engine.InputFile{{Path: "/etc/x", Content: "x"}})},
		{"missing file", func() error { _, err := m.ReadFile(ctx, id, "nope.txt"); return err }()},
		{"file too large", m.WriteFiles(ctx, id, []engine.InputFile{{Path: "big", Content: strings.Repeat("x", config.Default().Limits.MaxFileBytes+1)}})},
		{"unknown session", m.WriteFiles(ctx, "sess-nope", []engine.InputFile{{Path: "a", Content: "x"}})},
	}
	for _, c := range bad {
		if c.err == nil {
			t.Errorf("%s: accepted", c.name)
		}
	}
	if _, err := m.Run(ctx, engine.Request{SessionID: id, Language: "bash", Code: "echo"}, engine.RunOptions{}); err == nil || !strings.Contains(err.Error(), "runs python") {
		t.Errorf("wrong language: %v", err)
	}
	// Filling the workspace: an error inside, the session survives.
	r = run(t, m, id, "try:\n    open('fill','wb').write(b'x'*(200*1024*1024))\nexcept OSError as e:\n    print('full', e.errno)")
	if !strings.HasPrefix(r.Stdout, "full") && r.Status != engine.StatusError {
		t.Errorf("filling the workspace: %+v", r)
	}
	if r := run(t, m, id, "import os; os.remove('fill') if os.path.exists('fill') else None; 6*7"); r.Value != "42" {
		t.Errorf("session unusable after a full workspace: %+v", r)
	}
}

func TestSessionLimits(t *testing.T) {
	cfg := config.Default()
	cfg.Sessions.MaxSessions = 2
	m := fakeManager(t, &cfg)
	ctx := context.Background()
	short := create(t, m, "bash", 1)
	create(t, m, "bash", 0)
	if _, err := m.Create(ctx, "bash", 0); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Fatalf("cap: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, s := range m.List() {
			if s.SessionID == short {
				return false
			}
		}
		return true
	}, "the session idle for its 1 s timeout to expire")
	if _, err := m.Run(ctx, engine.Request{SessionID: short, Code: "true"}, engine.RunOptions{}); err == nil || !strings.Contains(err.Error(), "unknown session") {
		t.Fatalf("idle session still there: %v", err)
	}
	if _, err := m.Create(ctx, "bash", 0); err != nil {
		t.Fatalf("a slot should be free after expiry: %v", err)
	}
	if _, err := m.Create(ctx, "bash", 999999); err == nil {
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
