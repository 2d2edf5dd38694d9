package entry

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestFindsTheEntryPointPeopleWrite(t *testing.T) {
	cases := []struct {
		name, convention, file, code string
		wantFile, wantMain           string
		wantAppended                 string // the end of the source, when the convention completes it
	}{
		{"java public class Main", "java", "Main.java",
			"public class Main {\n public static void main(String[] args) {}\n}", "Main.java", "Main", ""},
		{"java public class Solution is saved as Solution.java", "java", "Main.java",
			"import java.util.*;\n\npublic class Solution {\n    public static void main(String[] args) { System.out.println(\"class Other {\"); }\n}", "Solution.java", "Solution", ""},
		{"java non-public class with main keeps the file name", "java", "Main.java",
			"class FizzBuzz {\n    static int n = 3;\n    public static void main(String... args) {}\n}", "Main.java", "FizzBuzz", ""},
		{"java helper classes before the one with main", "java", "Main.java",
			"record Point(int x, int y) {}\ninterface Shape { double area(); }\nenum Color { RED; void main(String[] a) {} }\n// public class Fake {}\n/* public class Fake2 {} */\npublic final class App {\n  @SuppressWarnings(\"x\") public static void main(final String[] args) { new Object() { void main() {} }; }\n}", "App.java", "App", ""},
		{"java package is part of the class name", "java", "Main.java",
			"package com.example.demo;\n\npublic class HelloWorld {\n  public static void main(String[] args) {}\n}", "HelloWorld.java", "com.example.demo.HelloWorld", ""},
		{"java public class without main, non-public class with it", "java", "Main.java",
			"public class Util { static int twice(int x) { return 2 * x; } }\nclass Runner { public static void main(String[] args) {} }", "Util.java", "Runner", ""},
		{"java text block and char literals do not confuse it", "java", "Main.java",
			"public class Q {\n  static String s = \"\"\"\n    public class X { }\n    \"\"\";\n  static char c = '{';\n  public static void main(String[] a) {}\n}", "Q.java", "Q", ""},

		{"kotlin top-level fun main", "kotlin", "main.kt", "fun main() {\n    println(\"hi\")\n}", "main.kt", "MainKt", ""},
		{"kotlin package", "kotlin", "main.kt", "package org.acme.app\n\nfun main(args: Array<String>) {}", "main.kt", "org.acme.app.MainKt", ""},
		{"kotlin @file:JvmName", "kotlin", "main.kt", "@file:JvmName(\"Program\")\npackage x\n\nfun main() {}", "main.kt", "x.Program", ""},
		{"kotlin object with @JvmStatic main", "kotlin", "main.kt",
			"object App {\n    @JvmStatic\n    fun main(args: Array<String>) { println(\"${args.size} {\") }\n}", "main.kt", "App", ""},
		{"kotlin companion object main", "kotlin", "main.kt",
			"class Solver {\n    companion object {\n        @JvmStatic fun main(args: Array<String>) {}\n    }\n}", "main.kt", "Solver", ""},
		{"kotlin main after classes and templates", "kotlin", "main.kt",
			"data class P(val x: Int)\nclass Box { fun main() {} }\nval s = \"${P(1).let { \"}\" }}\"\n/* fun main( /* nested */ */\nfun main() {}", "main.kt", "MainKt", ""},

		{"erlang module stays as written", "erlang", "main.erl", "-module(hello).\n-export([main/0]).\nmain() -> ok.", "main.erl", "", ""},
		{"clojure namespace with -main gets it called", "clojure", "main.clj",
			"(ns my-app.core\n  (:gen-class))\n\n(defn -main [& args]\n  (println \"hi\"))", "main.clj", "my-app.core/-main", "(apply my-app.core/-main *command-line-args*)\n"},
		{"clojure -main without ns runs in user", "clojure", "main.clj",
			"(defn -main\n  \"Entry; (-main) in a docstring is not a call\"\n  [& args] (println args))", "main.clj", "user/-main", "(apply user/-main *command-line-args*)\n"},
		{"clojure script that calls -main itself is left alone", "clojure", "main.clj",
			"(ns demo)\n(defn -main [& args] (println 1))\n(-main)", "main.clj", "", ""},
		{"clojure script without -main is left alone", "clojure", "main.clj", "(println \"-main\") ; -main", "main.clj", "", ""},

		{"haskell without a module header", "haskell", "main.hs", "main = putStrLn \"x\"", "main.hs", "Main", ""},
		{"haskell module Solution", "haskell", "main.hs",
			"{-# LANGUAGE ScopedTypeVariables #-}\n-- module Fake where\nmodule Solution (main) where\n\nmain :: IO ()\nmain = pure ()", "main.hs", "Solution", ""},
		{"go package main", "go", "main.go", "// Package main is a tool.\npackage main\n\nfunc main() {}", "main.go", "", ""},

		{"scala object Main with def main", "scala", "main.scala",
			"object Main {\n  def main(args: Array[String]): Unit = println(\"hi\")\n}", "main.scala", "Main", ""},
		{"scala object HelloWorld extends App", "scala", "main.scala",
			"object HelloWorld extends App {\n  println(s\"${args.length} {\")\n}", "main.scala", "HelloWorld", ""},
		{"scala helpers, case objects and a companion before the program", "scala", "main.scala",
			"package demo.app\n\nsealed trait Shape\ncase object Dot extends Shape\nclass Box { def main(a: Array[String]) = () }\nobject Box { val n = 1 }\n/* object Fake { def main(a: Array[String]) = () /* nested */ } */\nobject Solution {\n  def main(args: Array[String]): Unit = {}\n}", "main.scala", "demo.app.Solution", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Find(c.convention, c.file, []byte(c.code))
			if err != nil {
				t.Fatalf("Find: %v", err)
			}
			if p.File != c.wantFile || p.Main != c.wantMain {
				t.Fatalf("got file %q main %q, want %q %q", p.File, p.Main, c.wantFile, c.wantMain)
			}
			if c.wantAppended == "" && string(p.Source) != c.code {
				t.Errorf("source changed:\n%s", p.Source)
			}
			if c.wantAppended != "" && (!strings.HasPrefix(string(p.Source), c.code) || !strings.HasSuffix(string(p.Source), c.wantAppended)) {
				t.Errorf("source is\n%s\nwant the code and then %q", p.Source, c.wantAppended)
			}
		})
	}
}

func TestScalaWithoutAnEntryPointSaysWhatTheRunnerExpects(t *testing.T) {
	cases := []struct{ name, code, want string }{
		{"no object with main", "object Util { def twice(x: Int) = 2 * x }", "object Main { def main(args: Array[String]): Unit"},
		{"scala 3 @main", "@main def hello(): Unit = println(\"hi\")", "`@main` is Scala 3, and this runner has Scala 2.11"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Find("scala", "main.scala", []byte(c.code))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestErlangEscriptsBecomeModulesWithTheSameLines(t *testing.T) {
	cases := []struct{ name, code, want string }{
		{"shebang and no module", "#!/usr/bin/env escript\n%%! -smp enable\nmain(_) -> ok.\n",
			"-module(main). %!/usr/bin/env escript\n%%! -smp enable\nmain(_) -> ok.\n"},
		{"no module", "main(_) -> io:format(\"-module(x).~n\").\n", "-module(main). main(_) -> io:format(\"-module(x).~n\").\n"},
		{"commented-out module does not count", "% -module(x).\nmain() -> ok.\n", "-module(main). % -module(x).\nmain() -> ok.\n"},
		{"module after a shebang", "#!/usr/bin/env escript\n-module(s).\nmain(_) -> ok.\n", "%!/usr/bin/env escript\n-module(s).\nmain(_) -> ok.\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Find("erlang", "main.erl", []byte(c.code))
			if err != nil {
				t.Fatal(err)
			}
			if string(p.Source) != c.want {
				t.Fatalf("got\n%s\nwant\n%s", p.Source, c.want)
			}
			if strings.Count(string(p.Source), "\n") != strings.Count(c.code, "\n") {
				t.Errorf("line count changed")
			}
		})
	}
}

func TestCodeWithoutARunnableEntryPointIsRefusedWithWhatTheRunnerExpects(t *testing.T) {
	cases := []struct{ name, convention, file, code, want string }{
		{"java two public classes", "java", "Main.java",
			"public class A { public static void main(String[] a) {} }\npublic class B {}", "2 public top-level classes (A, B)"},
		{"java no main", "java", "Main.java", "public class Solution {\n  int solve() { return 1; }\n}", "no class declares `public static void main(String[] args)`"},
		{"java instance main is not a runnable main", "java", "Main.java", "class A { void main(String[] a) {} }", "no class declares"},
		{"java no class at all", "java", "Main.java", "System.out.println(1);", "declares no class at all"},
		{"kotlin no main", "kotlin", "main.kt", "fun solve(): Int = 42", "no `fun main()`"},
		{"kotlin main in a class is not an entry point", "kotlin", "main.kt", "class A { fun main() {} }", "no `fun main()`"},
		{"go package other than main", "go", "main.go", "package solution\n\nfunc main() {}", "`package solution`"},
		{"unknown convention", "intercal", "main.i", "x", "unknown entry-point convention"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Find(c.convention, c.file, []byte(c.code))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got error %v, want one containing %q", err, c.want)
			}
		})
	}
}

func TestFillPutsTheEntryPointIntoCommands(t *testing.T) {
	got := Fill([]string{"javac", "-d", "/tmp/build", "{file}", "--main={main}"}, Point{File: "App.java", Main: "x.App"})
	want := []string{"javac", "-d", "/tmp/build", "App.java", "--main=x.App"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("got %q", got)
	}
}

func TestReadsTheSourceFormTheCompilerMustBeTold(t *testing.T) {
	const fixed = "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. HELLO.\n      * a comment line\n       PROCEDURE DIVISION.\n           DISPLAY \"hello\".\n           STOP RUN.\n"
	cases := []struct{ name, convention, file, code, want string }{
		{"cobol fixed format, code in area A from column 8", "cobol", "main.cob", fixed, "fixed"},
		{"cobol fixed format with sequence numbers and indicators", "cobol", "main.cob",
			"000100 IDENTIFICATION DIVISION.\n000200 PROGRAM-ID. SEQ.\n000300*COMMENT\n000400/PAGE\n000500 PROCEDURE DIVISION.\n000600D    DISPLAY \"debug\".\n000700     DISPLAY \"a long literal that goes on\n000800-    \"and on\".\n000900     STOP RUN.\n", "fixed"},
		{"cobol fixed format indented with tabs", "cobol", "main.cob", "\tIDENTIFICATION DIVISION.\n\tPROGRAM-ID. TABS.\n\tPROCEDURE DIVISION.\n\t    DISPLAY \"x\".\n", "fixed"},
		{"cobol fixed format switching itself to free at column 8", "cobol", "main.cob", "       >>SOURCE FORMAT IS FREE\nIDENTIFICATION DIVISION.\n", "free"},
		{"cobol free format from column 1", "cobol", "main.cob",
			"IDENTIFICATION DIVISION.\nPROGRAM-ID. HELLO.\nPROCEDURE DIVISION.\n    DISPLAY \"hello\".\n    STOP RUN.\n", "free"},
		{"cobol free format indented by four, with *> comments", "cobol", "main.cob",
			"*> hello in free format\n    identification division.\n    program-id. hello.\n    procedure division.\n        display \"hello\".\n", "free"},
		{"cobol >>SOURCE FORMAT FREE in column 1", "cobol", "main.cob", ">>SOURCE FORMAT FREE\n       IDENTIFICATION DIVISION.\n", "free"},
		{"cobol Micro Focus $SET SOURCEFORMAT free", "cobol", "main.cob", "$SET SOURCEFORMAT\"FREE\"\n       IDENTIFICATION DIVISION.\n", "free"},
		{"cobol free format with CRLF line ends", "cobol", "main.cob", "IDENTIFICATION DIVISION.\r\nPROGRAM-ID. X.\r\n", "free"},

		{"asm x86-64 with syscall", "asm", "main.asm", "global _start\nsection .text\n_start:\n  mov rax, 60\n  xor edi, edi\n  syscall\n", "64"},
		{"asm x86-64 main with the C library and 32-bit moves", "asm", "main.asm", "extern printf\nglobal main\nmain:\n  push rbp\n  mov eax, 0\n  pop rbp\n  ret\n", "64"},
		{"asm 32-bit Linux hello world with int 0x80", "asm", "main.asm",
			"section .data\n  msg db \"Hello, World!\", 0xa\n  len equ $ - msg\nsection .text\n  global _start\n_start:\n  mov edx, len\n  mov ecx, msg\n  mov ebx, 1\n  mov eax, 4\n  int 0x80\n  mov eax, 1\n  int 80h\n", "32"},
		{"asm 32-bit cdecl frame", "asm", "main.asm", "global f\nf:\n  push ebp\n  mov ebp, esp\n  mov eax, [ebp+8]\n  pop ebp\n  ret\n", "32"},
		{"asm BITS 32", "asm", "main.asm", "BITS 32\nglobal _start\n_start: ret\n", "32"},
		{"asm [bits 64] overrides int 0x80", "asm", "main.asm", "[bits 64]\n_start:\n  mov eax, 1\n  int 0x80\n", "64"},
		{"asm int 0x80 beside 64-bit registers stays 64-bit", "asm", "main.asm", "_start:\n  mov rax, 1\n  int 0x80\n", "64"},
		{"asm int 0x80 in a comment or a string does not count", "asm", "main.asm", "; int 0x80 is the old way\nmsg: db \"int 0x80\", 0\n_start:\n  mov eax, 60\n  xor edi, edi\n  ret\n", "64"},
		{"asm register names inside labels do not count", "asm", "main.asm", "_start:\n  jmp rax_done\nrax_done:\n  mov eax, 1\n  int 0x80\n", "32"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Find(c.convention, c.file, []byte(c.code))
			if err != nil {
				t.Fatal(err)
			}
			if p.Form != c.want || p.File != c.file || string(p.Source) != c.code {
				t.Fatalf("got form %q, file %q (source kept: %t), want form %q", p.Form, p.File, string(p.Source) == c.code, c.want)
			}
		})
	}
}

// The idiom corpus's programs were written in fixed format and for x86-64,
// but those named free*, in free format.
func TestTheCorpusProgramsKeepTheirForm(t *testing.T) {
	for _, c := range []struct{ convention, dir, ext, want string }{
		{"cobol", "cobol", ".cob", "fixed"},
		{"asm", "asm", ".asm", "64"},
	} {
		files, err := filepath.Glob(filepath.Join("..", "..", "engine", "testdata", "corpus", c.dir, "*"+c.ext))
		if err != nil || len(files) == 0 {
			t.Fatalf("no %s corpus programs (%v)", c.dir, err)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			want := c.want
			if strings.HasPrefix(filepath.Base(f), "free") {
				want = "free" // written in free format on purpose
			}
			if p, _ := Find(c.convention, "main"+c.ext, src); p.Form != want {
				t.Errorf("%s: form %q, want %q", f, p.Form, want)
			}
		}
	}
}

func TestKotlinCodeGetsStandInsForWhatItsCompilerLacks(t *testing.T) {
	cases := []struct {
		name, code string
		want       []string // the stand-ins appended, by the name they declare
	}{
		{"readln and String.uppercase", "fun main() {\n    val name = readln()\n    println(\"Hello, ${name.uppercase()}!\")\n}", []string{"fun readln()", "fun String.uppercase()"}},
		{"readlnOrNull, digitToInt and code", "fun main() {\n    val s = readlnOrNull() ?: return\n    println(s.sumOf { it.digitToInt() } + s[0].code)\n}", []string{"fun readlnOrNull()", "fun Char.digitToInt()", "val Char.code"}},
		{"Kotlin 1.3 code stays as written", "fun main() {\n    println(readLine()!!.toUpperCase())\n}", nil},
		{"a function the code declares itself", "fun readln(): String = \"x\"\nfun main() {\n    println(readln())\n}", nil},
		{"names in strings and comments do not count", "// readln()\nfun main() {\n    println(\"readln() .uppercase()\")\n}", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p, err := Find("kotlin", "main.kt", []byte(c.code))
			if err != nil {
				t.Fatal(err)
			}
			added := strings.TrimPrefix(string(p.Source), c.code)
			if !strings.HasPrefix(string(p.Source), c.code) {
				t.Fatalf("the code itself changed:\n%s", p.Source)
			}
			if len(c.want) == 0 && added != "" {
				t.Fatalf("appended %q, want nothing", added)
			}
			for _, w := range c.want {
				if !strings.Contains(added, w) {
					t.Errorf("appended %q, want %q in it", added, w)
				}
			}
		})
	}
}
