//go:build !fast

package engine_test

import (
	"bytes"
	"encoding/binary"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// entryCase is a program in one of the shapes people give a language's
// entry point, and what running it must give.
type entryCase struct {
	name, lang, code string
	args             []string
	stdout           string // wanted stdout of a program that runs
	// A program the runner cannot start: its status, and what the stage's
	// stderr (compile stage for compiled languages) must say.
	status, stderr string
}

var entryCases = []entryCase{
	{name: "java public class Solution", lang: "java",
		code:   "import java.util.*;\n\npublic class Solution {\n    public static void main(String[] args) {\n        System.out.println(\"solution \" + Arrays.toString(args));\n    }\n}",
		args:   []string{"a", "b"},
		stdout: "solution [a, b]\n"},
	{name: "java non-public class FizzBuzz with main and a helper class", lang: "java",
		code:   "class Counter {\n    static String say(int i) { return i % 15 == 0 ? \"FizzBuzz\" : i % 3 == 0 ? \"Fizz\" : i % 5 == 0 ? \"Buzz\" : String.valueOf(i); }\n}\n\nclass FizzBuzz {\n    public static void main(String[] args) {\n        for (int i = 1; i <= 5; i++) System.out.println(Counter.say(i));\n    }\n}",
		stdout: "1\n2\nFizz\n4\nBuzz\n"},
	{name: "java package and public class HelloWorld", lang: "java",
		code:   "package com.example;\n\npublic class HelloWorld {\n    public static void main(String[] args) {\n        System.out.println(HelloWorld.class.getName());\n    }\n}",
		stdout: "com.example.HelloWorld\n"},
	{name: "java record and interface before the public class", lang: "java",
		code:   "import java.util.List;\n\nrecord Point(int x, int y) {}\n\ninterface Shape { double area(); }\n\npublic class Geometry {\n    public static void main(String[] args) {\n        List<Point> ps = List.of(new Point(1, 2), new Point(3, 4));\n        Shape s = () -> 2.5;\n        System.out.println(ps.get(1).x() + \" \" + s.area());\n    }\n}",
		stdout: "3 2.5\n"},
	{name: "java two public classes", lang: "java",
		code:   "public class A {\n    public static void main(String[] args) {}\n}\n\npublic class B {}",
		status: engine.StatusCompileError, stderr: "2 public top-level classes (A, B)"},
	{name: "java no main method", lang: "java",
		code:   "public class Solution {\n    public int solve(int n) { return n * 2; }\n}",
		status: engine.StatusCompileError, stderr: "no class declares `public static void main(String[] args)`"},

	{name: "kotlin fun main in a package", lang: "kotlin",
		code:   "package org.example.app\n\nfun greet(name: String) = \"hello, $name\"\n\nfun main(args: Array<String>) {\n    println(greet(args.firstOrNull() ?: \"world\"))\n}",
		args:   []string{"kotlin"},
		stdout: "hello, kotlin\n"},
	{name: "kotlin object with @JvmStatic main", lang: "kotlin",
		code:   "object App {\n    @JvmStatic\n    fun main(args: Array<String>) {\n        println(\"object main\")\n    }\n}",
		stdout: "object main\n"},
	{name: "kotlin 1.5 and 1.6 functions on the 1.3 compiler", lang: "kotlin",
		code:   "fun main() {\n    val line = readlnOrNull() ?: \"42\"\n    println(line.map { it.digitToInt() }.sum() + 'a'.code)\n    println(\"${'x'.uppercaseChar()}${\"y\".uppercase()}${'Z'.lowercase()}${\"W\".lowercase()}\")\n}",
		stdout: "103\nXYzw\n"},
	{name: "kotlin no main", lang: "kotlin",
		code:   "fun solve(n: Int): Int = n * 2",
		status: engine.StatusCompileError, stderr: "no `fun main()`"},

	{name: "erlang module hello with main/0", lang: "erlang",
		code:   "-module(hello).\n-export([main/0]).\n\nmain() ->\n    io:format(\"hello from ~p~n\", [?MODULE]).",
		stdout: "hello from hello\n"},
	{name: "erlang escript with a shebang and no module", lang: "erlang",
		code:   "#!/usr/bin/env escript\n%% -*- erlang -*-\n%%! -smp enable\n\nmain(Args) ->\n    io:format(\"~p~n\", [length(Args)]).",
		args:   []string{"x", "y"},
		stdout: "2\n"},
	{name: "erlang module with an unexported helper", lang: "erlang",
		code:   "-module(calc).\n-export([main/1]).\n\nmain(_) ->\n    io:format(\"~p~n\", [square(7)]).\n\nsquare(X) -> X * X.",
		stdout: "49\n"},
	{name: "erlang module without main", lang: "erlang",
		code:   "-module(lib).\n-export([start/0]).\n\nstart() -> ok.",
		status: engine.StatusError, stderr: "module lib has no main/1 or main/0"},
	{name: "erlang compile error reaches stderr", lang: "erlang",
		code:   "-module(broken).\n-export([main/1]).\n\nmain(_) ->\n    undefined_helper().",
		status: engine.StatusError, stderr: "main.erl:5:5: function undefined_helper/0 undefined"},

	{name: "clojure namespace with -main", lang: "clojure",
		code:   "(ns my-app.core\n  (:require [clojure.string :as str])\n  (:gen-class))\n\n(defn -main [& args]\n  (println (str/join \",\" args)))",
		args:   []string{"a", "b"},
		stdout: "a,b\n"},
	{name: "clojure script that calls -main itself", lang: "clojure",
		code:   "(ns demo)\n\n(defn -main [& args]\n  (println \"once\"))\n\n(-main)",
		stdout: "once\n"},

	{name: "haskell module Solution", lang: "haskell",
		code:   "module Solution (main) where\n\nmain :: IO ()\nmain = putStrLn \"solution\"",
		stdout: "solution\n"},

	{name: "go package main whatever the file was called", lang: "go",
		code:   "// solution.go\npackage main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"go main\")\n}",
		stdout: "go main\n"},
	{name: "go package other than main", lang: "go",
		code:   "package solution\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"x\")\n}",
		status: engine.StatusCompileError, stderr: "change the package clause to `package main`"},

	{name: "csharp Main in a static class in a namespace", lang: "csharp",
		code:   "using System;\n\nnamespace Demo\n{\n    public static class Solution\n    {\n        public static int Main(string[] args)\n        {\n            Console.WriteLine(\"args: \" + args.Length);\n            return 0;\n        }\n    }\n}",
		args:   []string{"one"},
		stdout: "args: 1\n"},
	{name: "csharp two Main methods", lang: "csharp",
		code:   "class A { static void Main() {} }\nclass B { static void Main() {} }",
		status: engine.StatusCompileError, stderr: "more than one entry point"},
	{name: "scala object extends App in a package", lang: "scala",
		code:   "package demo.app\n\ncase class Point(x: Int, y: Int)\n\nobject HelloWorld extends App {\n  println(s\"${Point(1, 2)} ${args.mkString(\",\")}\")\n}",
		args:   []string{"a", "b"},
		stdout: "Point(1,2) a,b\n"},
	{name: "scala object Solution with def main after a companion", lang: "scala",
		code:   "class Counter(val n: Int)\nobject Counter { def zero = new Counter(0) }\n\nobject Solution {\n  def main(args: Array[String]): Unit = println(Counter.zero.n)\n}",
		stdout: "0\n"},
	{name: "ada procedure named after the program, with its package in the same file", lang: "ada",
		code:   "package Greetings is\n   procedure Hello (Name : String);\nend Greetings;\n\nwith Ada.Text_IO;\npackage body Greetings is\n   procedure Hello (Name : String) is\n   begin\n      Ada.Text_IO.Put_Line (\"hello, \" & Name);\n   end Hello;\nend Greetings;\n\nwith Greetings;\nprocedure Hello_World is\nbegin\n   Greetings.Hello (\"world\");\nend Hello_World;",
		stdout: "hello, world\n"},
	{name: "ada package without a procedure to run", lang: "ada",
		code:   "package Greetings is\n   procedure Hello;\nend Greetings;\n\nwith Ada.Text_IO;\npackage body Greetings is\n   procedure Hello is\n   begin\n      Ada.Text_IO.Put_Line (\"hello\");\n   end Hello;\nend Greetings;",
		status: engine.StatusCompileError, stderr: "is a package, and the runner builds the last procedure body in the file as the main program"},
	{name: "scala 3 @main", lang: "scala",
		code:   "@main def hello(): Unit = println(\"hi\")",
		status: engine.StatusCompileError, stderr: "`@main` is Scala 3, and this runner has Scala 2.11"},

	{name: "cobol free format from column 1", lang: "cobol",
		code:   "IDENTIFICATION DIVISION.\nPROGRAM-ID. FREEHELLO.\nDATA DIVISION.\nWORKING-STORAGE SECTION.\n01 WS-COUNT PIC 9 VALUE 3.\nPROCEDURE DIVISION.\n    *> a floating comment\n    PERFORM WS-COUNT TIMES\n        DISPLAY \"free \" WS-COUNT\n        SUBTRACT 1 FROM WS-COUNT\n    END-PERFORM\n    STOP RUN.\n",
		stdout: "free 3\nfree 2\nfree 1\n"},
	{name: "cobol >>SOURCE FORMAT FREE in column 1", lang: "cobol",
		code:   ">>SOURCE FORMAT FREE\nidentification division.\nprogram-id. directive.\nprocedure division.\ndisplay \"directive\".\nstop run.\n",
		stdout: "directive\n"},
	{name: "asm 32-bit program that starts at main with the C library", lang: "asm",
		code:   "extern printf\nsection .data\n    fmt db \"%d\", 10, 0\nsection .text\nglobal main\nmain:\n    push ebp\n    mov ebp, esp\n    push dword 42\n    push fmt\n    call printf\n    add esp, 8\n    xor eax, eax\n    pop ebp\n    ret\n",
		status: engine.StatusCompileError, stderr: "this image has no 32-bit C library: start it at _start with int 0x80 system calls, or write it for x86-64"},
}

// asm32Hello is the 32-bit Linux hello world of every NASM tutorial.
const asm32Hello = "section .data\n    msg db \"Hello, World!\", 0xa\n    len equ $ - msg\n\nsection .text\n    global _start\n\n_start:\n    mov edx, len\n    mov ecx, msg\n    mov ebx, 1\n    mov eax, 4\n    int 0x80\n\n    push dword 0\n    pop ebx\n    mov eax, 1\n    int 0x80\n"

// asm32Case is the 32-bit hello world: it runs where the kernel runs 32-bit
// programs, and is refused with what to write instead where it does not.
func asm32Case(t *testing.T) entryCase {
	c := entryCase{name: "asm 32-bit hello world with int 0x80", lang: "asm", code: asm32Hello}
	if kernelRuns32Bit(t) {
		c.stdout = "Hello, World!\n"
	} else {
		c.status, c.stderr = engine.StatusCompileError, "this machine's kernel does not run 32-bit programs: write it for x86-64"
	}
	return c
}

// kernelRuns32Bit reports whether the kernel that runs the sandboxes (the
// tests' own, Docker's containers sharing it) starts a 32-bit x86 program:
// a static ELF of 93 bytes that calls exit(0) with int 0x80. A kernel
// without IA-32 emulation answers ENOEXEC.
func kernelRuns32Bit(t *testing.T) bool {
	t.Helper()
	const base = 0x08048000
	var b bytes.Buffer
	le := func(vs ...any) {
		for _, v := range vs {
			_ = binary.Write(&b, binary.LittleEndian, v)
		}
	}
	b.Write([]byte{0x7f, 'E', 'L', 'F', 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	le(uint16(2), uint16(3), uint32(1), uint32(base+84), uint32(52), uint32(0), uint32(0), uint16(52), uint16(32), uint16(1), uint16(0), uint16(0), uint16(0))
	le(uint32(1), uint32(0), uint32(base), uint32(base), uint32(93), uint32(93), uint32(5), uint32(0x1000))
	b.Write([]byte{0xb8, 1, 0, 0, 0, 0x31, 0xdb, 0xcd, 0x80}) // mov eax, 1; xor ebx, ebx; int 0x80
	path := filepath.Join(t.TempDir(), "exit32")
	if err := os.WriteFile(path, b.Bytes(), 0o755); err != nil {
		t.Fatal(err)
	}
	err := exec.Command(path).Run()
	if err != nil && !errors.Is(err, syscall.ENOEXEC) {
		t.Fatalf("running a 32-bit x86 exit(0): %v (neither a run nor ENOEXEC)", err)
	}
	t.Logf("the kernel runs 32-bit x86 programs: %t", err == nil)
	return err == nil
}

// TestEntryPointsAgainstDocker runs programs whose entry points have the
// shapes people write (Java's public class Solution, Kotlin's packages,
// Erlang's main/0, Clojure's -main, ...), and code with no entry point the
// runner can start, which must say what the runner expected.
func TestEntryPointsAgainstDocker(t *testing.T) {
	// JVM and BEAM starts are slow on a loaded machine: a few at a time,
	// each with room to finish, the rest waiting their turn.
	cfg := config.Default()
	cfg.MaxConcurrentRuns, cfg.QueueTimeoutSeconds = 4, 600
	testutil.Unhurried(&cfg)
	e, b := testutil.Engine(t, &cfg)
	reg := languages.Builtin()
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cases := entryCases
	if runtime.GOARCH == "amd64" {
		cases = append(slices.Clone(entryCases), asm32Case(t))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			testutil.RequireImage(t, b, reg, c.lang)
			l, _ := reg.Lookup(c.lang)
			r := run(t, e, engine.Request{Language: c.lang, Code: c.code, Args: c.args})
			if strings.Contains(r.Stderr+compileStderr(r), "could not find or load main class") {
				t.Errorf("the JVM was asked for a class that is not there: %+v", r)
			}
			if c.status == "" {
				if r.Status != engine.StatusOK || r.Stdout != c.stdout {
					t.Fatalf("status %s stdout %q, want %q; stderr %q, compile stderr %q", r.Status, r.Stdout, c.stdout, r.Stderr, compileStderr(r))
				}
				return
			}
			stderr := r.Stderr
			if l.Compiled() {
				stderr = compileStderr(r)
			}
			if r.Status != c.status || !strings.Contains(stderr, c.stderr) {
				t.Fatalf("status %s, stderr %q; want %s with %q", r.Status, stderr, c.status, c.stderr)
			}
			if r.Stdout != "" {
				t.Errorf("stdout %q: the program should not have run", r.Stdout)
			}
		})
	}
}

func compileStderr(r *engine.Result) string {
	if r.Compile == nil {
		return ""
	}
	return r.Compile.Stdout + r.Compile.Stderr
}
