package entry

import (
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
		{"unknown convention", "cobol", "main.cob", "x", "unknown entry-point convention"},
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
