//go:build !fast

package engine_test

import (
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestALanguageOfAnotherArchitectureIsRefusedInItsSandbox runs, in real
// sandboxes of this machine's architecture, an interpreted and a compiled
// language that the registry limits to the other one: the agent in the
// sandbox refuses before the first stage, with the registry's reason and the
// sandbox's own architecture, and nothing runs. (On an arm64 daemon this is
// what x86-64 assembly and Crystal answer.)
func TestALanguageOfAnotherArchitectureIsRefusedInItsSandbox(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	f := languages.Builtin().File()
	for i, l := range f.Languages {
		if l.Name == "bash" || l.Name == "c" {
			f.Languages[i].Architectures, f.Languages[i].ArchitecturesReason = []string{other}, "a test limits it there"
		}
	}
	reg, err := languages.New(f)
	if err != nil {
		t.Fatal(err)
	}
	b := testutil.Backend(t)
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	e := engine.New(cfg, reg, b, nil)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	for _, c := range []struct{ lang, code, status string }{
		{"bash", "echo ran", engine.StatusError},
		{"c", "#include <stdio.h>\nint main(void) { puts(\"ran\"); return 0; }", engine.StatusCompileError},
	} {
		t.Run(c.lang, func(t *testing.T) {
			testutil.RequireImage(t, b, reg, c.lang)
			l, _ := reg.Lookup(c.lang)
			r := run(t, e, engine.Request{Language: c.lang, Code: c.code})
			stderr := r.Stderr
			if l.Compiled() {
				stderr = compileStderr(r)
			}
			want := l.DisplayName + " runs only in " + other + " sandboxes: a test limits it there (this sandbox is linux/" + runtime.GOARCH + ")"
			if r.Status != c.status || r.ExitCode != 2 || !strings.Contains(stderr, want) || strings.Contains(r.Stdout, "ran") {
				t.Fatalf("status %s, exit code %d, stdout %q, stderr %q; want %s, exit code 2 and %q", r.Status, r.ExitCode, r.Stdout, stderr, c.status, want)
			}
		})
	}
}
