//go:build !fast

package engine_test

import (
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestTypeScriptTypeErrorsAgainstDocker: type errors are reported and
// counted but do not stop the run (as tsx, Deno and Bun run code), syntax
// errors do, and an operator can make type errors fatal.
func TestTypeScriptTypeErrorsAgainstDocker(t *testing.T) {
	lenientCfg := config.Default()
	testutil.Unhurried(&lenientCfg)
	lenient, b := testutil.Engine(t, &lenientCfg)
	testutil.RequireImage(t, b, languages.Builtin(), "typescript")
	strictCfg := config.Default()
	strictCfg.TypeErrorsFatal = true
	testutil.Unhurried(&strictCfg)
	strict, _ := testutil.Engine(t, &strictCfg)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })

	const typeErrors = "function add(a, b) {\n  return a + b;\n}\nconst n: number = \"7\";\nconsole.log(add(1, 2), n);\n"
	cases := []struct {
		name       string
		e          *engine.Engine
		code       string
		status     string
		stdout     string
		typeErrors int
		stderr     []string // wanted in compile.stderr
	}{
		{"type errors are reported and the program runs", lenient, typeErrors, engine.StatusOK, "3 7\n", 3,
			[]string{"main.ts(1,14): error TS7006: Parameter 'a' implicitly has an 'any' type.", "error TS2322"}},
		{"well-typed code has no type errors", lenient, "const s: string = 'ok';\nconsole.log(s);", engine.StatusOK, "ok\n", 0, nil},
		{"a syntax error stops the run", lenient, "const = ;\nconsole.log('ran');", engine.StatusCompileError, "", 0,
			[]string{"error TS1134", "syntax errors", "so it was not run"}},
		// tsc reports only the syntax errors of a file that has them.
		{"a type error in a file with a syntax error stops the run", lenient, "const n: number = 'x';\nconsole.log(n;", engine.StatusCompileError, "", 0,
			[]string{"main.ts(2,14): error TS1005", "type errors alone would not have stopped it"}},
		{"type errors made fatal by the operator stop the run", strict, typeErrors, engine.StatusCompileError, "", 3,
			[]string{"error TS7006", "type errors fatal (type_errors_fatal)"}},
		{"well-typed code runs when type errors are fatal", strict, "console.log(1 + 1);", engine.StatusOK, "2\n", 0, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := run(t, c.e, engine.Request{Language: "typescript", Code: c.code})
			if r.Compile == nil {
				t.Fatalf("no compile stage: %+v", r)
			}
			if r.Status != c.status || r.Stdout != c.stdout || r.TypeErrors != c.typeErrors {
				t.Fatalf("status %s stdout %q type_errors %d, want %s %q %d; compile stderr %q, stderr %q",
					r.Status, r.Stdout, r.TypeErrors, c.status, c.stdout, c.typeErrors, r.Compile.Stderr, r.Stderr)
			}
			for _, want := range c.stderr {
				if !strings.Contains(r.Compile.Stderr, want) {
					t.Errorf("compile stderr %q lacks %q", r.Compile.Stderr, want)
				}
			}
			if r.Compile.Stdout != "" {
				t.Errorf("compile stdout %q: diagnostics belong on stderr", r.Compile.Stdout)
			}
			if c.status == engine.StatusOK && c.typeErrors > 0 && !strings.Contains(r.ExitReason, "despite them") {
				t.Errorf("message %q does not say the program ran despite type errors", r.ExitReason)
			}
		})
	}
}
