//go:build !fast

package mcpserver_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestOldToolchainsFailAtCompileWithTheCompilersWords pins what a user sees
// when code needs a newer C# or Kotlin than the images hold (Mono's mcs
// speaks C# 7; Debian's Kotlin is 1.3.31, and no newer compiler is
// installable from the archives these machines reach): the compile stage
// fails, the run stage never starts, and stderr carries the compiler's own
// diagnostic naming what it did not understand. docs/LANGUAGES.md quotes
// these errors; a change here must change it too.
func TestOldToolchainsFailAtCompileWithTheCompilersWords(t *testing.T) {
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	eng, b := testutil.Engine(t, &cfg)
	reg := languages.Builtin()
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cs := connect(t, eng)

	tests := []struct {
		name, language, code string
		want                 []string // in the compile stage's stderr
	}{
		{
			name:     "a C# 9 record on Mono, after top-level statements (which run)",
			language: "csharp",
			code:     "var people = new[] { new Person(\"Ada\", 36) };\nforeach (var p in people)\n    Console.WriteLine($\"{p.Name} is {p.Age}\");\n\nrecord Person(string Name, int Age);\n",
			want:     []string{"main.cs(5,", "error CS1525: Unexpected symbol `record'"},
		},
		{
			name:     "Kotlin 1.6 buildList on Kotlin 1.3",
			language: "kotlin",
			code:     "fun main() {\n    val xs = buildList { add(1); add(2) }\n    println(xs)\n}\n",
			want:     []string{"main.kt:2:14: error: unresolved reference: buildList"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			testutil.RequireImage(t, b, reg, tc.language)
			out := runCodeResult(t, cs, map[string]any{"language": tc.language, "code": tc.code})
			t.Logf("status %s; compile stderr:\n%s", out.Status, stderrOf(out.Compile))
			if out.Status != engine.StatusCompileError || out.Compile == nil || out.Stdout != "" {
				t.Fatalf("want a compile error and no run; got status %s, stdout %q", out.Status, out.Stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(out.Compile.Stderr, w) {
					t.Errorf("compile stderr lacks %q", w)
				}
			}
		})
	}
}

// TestCSharpTopLevelStatementsRunOnMono runs a C# 9 program of top-level
// statements, as .NET 6's console template writes it (no using System, no
// class, args and an exit code), on Mono's C# 7 compiler: the csharp
// entry convention wraps them in a Main.
func TestCSharpTopLevelStatementsRunOnMono(t *testing.T) {
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	eng, b := testutil.Engine(t, &cfg)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	testutil.RequireImage(t, b, languages.Builtin(), "csharp")
	cs := connect(t, eng)
	code := "var total = args.Select(int.Parse).Sum();\nConsole.WriteLine($\"sum {total}\");\nawait Task.Delay(1);\nreturn total > 5 ? 3 : 0;\n"
	out := runCodeResult(t, cs, map[string]any{"language": "csharp", "code": code, "args": []string{"2", "4"}})
	if out.Stdout != "sum 6\n" || out.ExitCode != 3 {
		t.Fatalf("status %s exit %d stdout %q; compile stderr:\n%s", out.Status, out.ExitCode, out.Stdout, stderrOf(out.Compile))
	}
}

// runCodeResult calls run_code with args and returns its structured result.
func runCodeResult(t *testing.T, cs *mcp.ClientSession, args map[string]any) engine.Result {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: args})
	if err != nil {
		t.Fatal(err)
	}
	var out engine.Result
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func stderrOf(s *engine.Stage) string {
	if s == nil {
		return "(no compile stage)"
	}
	return s.Stderr
}
