//go:build !fast

package sessions_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

func init() {
	dockerManager = func(t *testing.T) *sessions.Manager { return manager(t, nil, "python", "bash") }
}

func manager(t *testing.T, cfg *config.Config, langs ...string) *sessions.Manager {
	t.Helper()
	e, b := testbackend.Engine(t, cfg)
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

// TestJavaScriptSessionKeepsState runs the JavaScript kernel on both
// Node.js releases: Debian's 20 (javascript) and the LTS (javascript-lts).
func TestJavaScriptSessionKeepsState(t *testing.T) {
	for _, lang := range []string{"javascript", "javascript-lts"} {
		t.Run(lang, func(t *testing.T) { testJavaScriptSessionKeepsState(t, lang) })
	}
}

func testJavaScriptSessionKeepsState(t *testing.T, lang string) {
	m := manager(t, nil, lang)
	id := create(t, m, lang, 0)
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
