package entry

import (
	"strings"
	"testing"
)

func TestCSharpTopLevelStatementsAreWrappedInAMainWhereTheCompilerPredatesThem(t *testing.T) {
	cases := []struct {
		name, src string
		wrapped   bool
		want      []string // in the source given to the compiler
	}{
		{name: "a class with Main is left as written", src: "using System;\n\nclass P\n{\n    static void Main()\n    {\n        Console.WriteLine(\"hi\");\n    }\n}\n"},
		{name: "a namespace is left as written", src: "namespace N {\n    class P { static int Main(string[] a) { return 0; } }\n}\n"},
		{name: "a statement alone runs in Main with the implicit usings", src: "Console.WriteLine(\"hello, world\");\n", wrapped: true,
			want: []string{"using System; using System.IO; ", "static class Program { static void Main(string[] args) { Console.WriteLine(\"hello, world\");\n"}},
		{name: "the user's usings stay and are not repeated", src: "using System;\nusing System.Linq;\n\nvar xs = new[] { 3, 1, 2 };\nConsole.WriteLine(string.Join(\",\", xs.OrderBy(x => x)));\n", wrapped: true,
			want: []string{"using System.IO; ", "using System;\nusing System.Linq;\n\nstatic class Program {"}},
		{name: "a type after the statements stays outside Main, on its line", src: "var p = new Point(1, 2);\nConsole.WriteLine(p.Sum());\n\nclass Point\n{\n    int x, y;\n    public Point(int x, int y) { this.x = x; this.y = y; }\n    public int Sum() => x + y;\n}\n", wrapped: true,
			want: []string{"Console.WriteLine(p.Sum());\n\n } } class Point\n"}},
		{name: "a value returned is the exit code", src: "Console.WriteLine(\"x\");\nreturn 3;\n", wrapped: true, want: []string{"static int Main(string[] args)"}},
		{name: "await makes Main async", src: "await System.Threading.Tasks.Task.Delay(1);\nConsole.WriteLine(\"done\");\n", wrapped: true, want: []string{"static void Main(string[] args) { MainAsync(args).GetAwaiter().GetResult(); } static async System.Threading.Tasks.Task MainAsync(string[] args) { await"}},
		{name: "comments, strings and directives before the first statement", src: "// class Foo { }\n#define DEBUG\nusing System;\n/* namespace */ Console.WriteLine(\"class { Main(\");\n", wrapped: true,
			want: []string{"/* namespace */ static class Program { static void Main(string[] args) { Console.WriteLine(\"class { Main(\");"}},
		{name: "a class named Program leaves the name to it", src: "Program.Hello();\nclass Program { public static void Hello() => System.Console.WriteLine(\"hi\"); }\n", wrapped: true,
			want: []string{"static class TopLevelProgram {"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Find("csharp", "main.cs", []byte(c.src))
			if err != nil {
				t.Fatal(err)
			}
			got := string(p.Source)
			if !c.wrapped {
				if got != c.src {
					t.Fatalf("changed:\n%s", got)
				}
				return
			}
			for _, w := range c.want {
				if !strings.Contains(got, w) {
					t.Errorf("want %q in:\n%s", w, got)
				}
			}
			if strings.Count(got, "\n") < strings.Count(c.src, "\n") || lineOf(got, "Console") != lineOf(c.src, "Console") {
				t.Errorf("the lines moved:\n%s", got)
			}
		})
	}
}

// lineOf is the line number of the first occurrence of s, or 0.
func lineOf(text, s string) int {
	before, _, found := strings.Cut(text, s)
	if !found {
		return 0
	}
	return strings.Count(before, "\n") + 1
}
