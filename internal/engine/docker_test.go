//go:build !fast

package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// programs holds, per language, one program for each behaviour every
// language must get right.
type programs struct {
	hello, stdin, args, exit3, runtimeErr, syntaxErr, loop, flood string
	runtimeErrWant, syntaxErrWant                                 string
	// runtimeErrSignal, instead of runtimeErrWant, is the signal a runtime
	// error ends the program with where nothing prints a message for it
	// (assembly: a bad memory access is SIGSEGV, and that is all).
	runtimeErrSignal string
	compileErr       string // compiled languages only
}

var perLanguage = map[string]programs{
	"python": {
		hello:          "print('hello, world')",
		stdin:          "import sys\nprint('got:', sys.stdin.readline().strip())",
		args:           "import sys\nprint(' '.join(sys.argv[1:]))",
		exit3:          "import sys\nsys.exit(3)",
		runtimeErr:     "print('before')\n1/0",
		runtimeErrWant: "ZeroDivisionError",
		syntaxErr:      "def (:\n",
		syntaxErrWant:  "SyntaxError",
		loop:           "while True:\n    pass",
		flood:          "import sys\nfor i in range(20000):\n    sys.stdout.write('line %06d xxxxxxxxxx\\n' % i)",
	},
	"javascript": {
		hello:          "console.log('hello, world')",
		stdin:          "const l = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\nconsole.log('got: ' + l)",
		args:           "console.log(process.argv.slice(2).join(' '))",
		exit3:          "process.exit(3)",
		runtimeErr:     "console.log('before');\nnull.x;",
		runtimeErrWant: "TypeError",
		syntaxErr:      "function (",
		syntaxErrWant:  "SyntaxError",
		loop:           "while (true) {}",
		flood:          "for (let i = 0; i < 20000; i++) console.log('line ' + String(i).padStart(6, '0') + ' xxxxxxxxxx')",
	},
	"javascript-lts": {
		hello:          "console.log('hello, world')",
		stdin:          "const l = require('fs').readFileSync(0, 'utf8').split('\\n')[0];\nconsole.log('got: ' + l)",
		args:           "console.log(process.argv.slice(2).join(' '))",
		exit3:          "process.exit(3)",
		runtimeErr:     "console.log('before');\nnull.x;",
		runtimeErrWant: "TypeError",
		syntaxErr:      "function (",
		syntaxErrWant:  "SyntaxError",
		loop:           "while (true) {}",
		flood:          "for (let i = 0; i < 20000; i++) console.log('line ' + String(i).padStart(6, '0') + ' xxxxxxxxxx')",
	},
	"typescript": {
		hello:          "const greeting: string = 'hello, world';\nconsole.log(greeting);",
		stdin:          "import * as fs from 'fs';\nconst l: string = fs.readFileSync(0, 'utf8').split('\\n')[0];\nconsole.log('got: ' + l);",
		args:           "const a: string[] = process.argv.slice(2);\nconsole.log(a.join(' '));",
		exit3:          "process.exit(3);",
		runtimeErr:     "console.log('before');\nthrow new Error('boom');",
		runtimeErrWant: "boom",
		syntaxErr:      "const = ;",
		syntaxErrWant:  "error TS",
		loop:           "while (true) {}",
		flood:          "for (let i = 0; i < 20000; i++) console.log('line ' + String(i).padStart(6, '0') + ' xxxxxxxxxx');",
		// Type errors do not stop a TypeScript run (TestTypeScriptTypeErrorsAgainstDocker); a grammar error does.
		compileErr: "let x = 1;\nbreak;\nconsole.log(x);",
	},
	"bash": {
		hello:          "echo 'hello, world'",
		stdin:          "read -r l\necho \"got: $l\"",
		args:           "echo \"$@\"",
		exit3:          "exit 3",
		runtimeErr:     "echo before\nls /nonexistent",
		runtimeErrWant: "No such file",
		syntaxErr:      "if then fi",
		syntaxErrWant:  "syntax error",
		loop:           "while :; do :; done",
		flood:          "for i in $(seq 0 19999); do printf 'line %06d xxxxxxxxxx\\n' $i; done",
	},
	"sh": {
		hello:          "echo 'hello, world'",
		stdin:          "read -r l\necho \"got: $l\"",
		args:           "echo \"$@\"",
		exit3:          "exit 3",
		runtimeErr:     "echo before\nls /nonexistent",
		runtimeErrWant: "No such file",
		syntaxErr:      "if then fi",
		syntaxErrWant:  "Syntax error",
		loop:           "while :; do :; done",
		flood:          "i=0\nwhile [ $i -lt 20000 ]; do printf 'line %06d xxxxxxxxxx\\n' $i; i=$((i + 1)); done",
	},
	"go": {
		hello:          "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"hello, world\")\n}",
		stdin:          "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\ts := bufio.NewScanner(os.Stdin)\n\ts.Scan()\n\tfmt.Println(\"got: \" + s.Text())\n}",
		args:           "package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n\t\"strings\"\n)\n\nfunc main() {\n\tfmt.Println(strings.Join(os.Args[1:], \" \"))\n}",
		exit3:          "package main\n\nimport \"os\"\n\nfunc main() {\n\tos.Exit(3)\n}",
		runtimeErr:     "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(\"before\")\n\tvar m map[string]int\n\tm[\"x\"] = 1\n}",
		runtimeErrWant: "assignment to entry in nil map",
		syntaxErr:      "package main\n\nfunc main() {",
		syntaxErrWant:  "syntax error",
		loop:           "package main\n\nfunc main() {\n\tfor {\n\t}\n}",
		flood:          "package main\n\nimport (\n\t\"bufio\"\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tw := bufio.NewWriter(os.Stdout)\n\tdefer w.Flush()\n\tfor i := 0; i < 20000; i++ {\n\t\tfmt.Fprintf(w, \"line %06d xxxxxxxxxx\\n\", i)\n\t}\n}",
		compileErr:     "package main\n\nfunc main() {\n\tvar n int = \"not a number\"\n\t_ = n\n}",
	},
	"rust": {
		hello:          "fn main() {\n    println!(\"hello, world\");\n}",
		stdin:          "use std::io::BufRead;\n\nfn main() {\n    let mut l = String::new();\n    std::io::stdin().lock().read_line(&mut l).unwrap();\n    println!(\"got: {}\", l.trim_end());\n}",
		args:           "fn main() {\n    let a: Vec<String> = std::env::args().skip(1).collect();\n    println!(\"{}\", a.join(\" \"));\n}",
		exit3:          "fn main() {\n    std::process::exit(3);\n}",
		runtimeErr:     "fn main() {\n    println!(\"before\");\n    let v: Vec<i32> = Vec::new();\n    let i = std::env::args().count() + 4;\n    println!(\"{}\", v[i]);\n}",
		runtimeErrWant: "index out of bounds",
		syntaxErr:      "fn main() {\n    let = ;\n}",
		syntaxErrWant:  "expected pattern",
		loop:           "fn main() {\n    loop {}\n}",
		flood:          "use std::io::Write;\n\nfn main() {\n    let out = std::io::stdout();\n    let mut w = std::io::BufWriter::new(out.lock());\n    for i in 0..20000 {\n        writeln!(w, \"line {:06} xxxxxxxxxx\", i).unwrap();\n    }\n}",
		compileErr:     "fn main() {\n    let n: i32 = \"not a number\";\n    println!(\"{}\", n);\n}",
	},
	"c": {
		hello:          "#include <stdio.h>\n\nint main(void) {\n    printf(\"hello, world\\n\");\n    return 0;\n}",
		stdin:          "#include <stdio.h>\n#include <string.h>\n\nint main(void) {\n    char l[256];\n    if (!fgets(l, sizeof l, stdin)) return 1;\n    l[strcspn(l, \"\\n\")] = 0;\n    printf(\"got: %s\\n\", l);\n    return 0;\n}",
		args:           "#include <stdio.h>\n\nint main(int argc, char **argv) {\n    for (int i = 1; i < argc; i++) printf(\"%s%s\", i > 1 ? \" \" : \"\", argv[i]);\n    printf(\"\\n\");\n    return 0;\n}",
		exit3:          "int main(void) {\n    return 3;\n}",
		runtimeErr:     "#include <assert.h>\n#include <stdio.h>\n\nint main(int argc, char **argv) {\n    printf(\"before\\n\");\n    fflush(stdout);\n    assert(argc > 5);\n    return 0;\n}",
		runtimeErrWant: "Assertion",
		syntaxErr:      "int main( {",
		syntaxErrWant:  "error:",
		loop:           "int main(void) {\n    volatile int forever = 1;\n    while (forever) {}\n    return 0;\n}",
		flood:          "#include <stdio.h>\n\nint main(void) {\n    for (int i = 0; i < 20000; i++) printf(\"line %06d xxxxxxxxxx\\n\", i);\n    return 0;\n}",
		compileErr:     "int main(void) {\n    return undeclared_variable;\n}",
	},
	"cpp": {
		hello:          "#include <iostream>\n\nint main() {\n    std::cout << \"hello, world\" << std::endl;\n}",
		stdin:          "#include <iostream>\n#include <string>\n\nint main() {\n    std::string l;\n    std::getline(std::cin, l);\n    std::cout << \"got: \" << l << \"\\n\";\n}",
		args:           "#include <iostream>\n\nint main(int argc, char **argv) {\n    for (int i = 1; i < argc; i++) std::cout << (i > 1 ? \" \" : \"\") << argv[i];\n    std::cout << \"\\n\";\n}",
		exit3:          "#include <cstdlib>\n\nint main() {\n    std::exit(3);\n}",
		runtimeErr:     "#include <iostream>\n#include <stdexcept>\n\nint main() {\n    std::cout << \"before\" << std::endl;\n    throw std::runtime_error(\"boom\");\n}",
		runtimeErrWant: "boom",
		syntaxErr:      "int main( {",
		syntaxErrWant:  "error:",
		loop:           "int main() {\n    volatile bool forever = true;\n    while (forever) {}\n}",
		flood:          "#include <cstdio>\n\nint main() {\n    for (int i = 0; i < 20000; i++) std::printf(\"line %06d xxxxxxxxxx\\n\", i);\n}",
		compileErr:     "#include <string>\n\nint main() {\n    int n = std::string(\"not a number\");\n    return n;\n}",
	},
	"fortran": {
		hello:          "program main\n  print '(a)', 'hello, world'\nend program main",
		stdin:          "program main\n  character(len=256) :: l\n  read (*, '(a)') l\n  print '(a)', 'got: ' // trim(l)\nend program main",
		args:           "program main\n  integer :: i\n  character(len=256) :: a\n  character(len=1024) :: s\n  s = ''\n  do i = 1, command_argument_count()\n    call get_command_argument(i, a)\n    if (i == 1) then\n      s = trim(a)\n    else\n      s = trim(s) // ' ' // trim(a)\n    end if\n  end do\n  print '(a)', trim(s)\nend program main",
		exit3:          "program main\n  stop 3\nend program main",
		runtimeErr:     "program main\n  integer :: i\n  character(len=3) :: s = 'abc'\n  print '(a)', 'before'\n  read (s, *) i\n  print *, i\nend program main",
		runtimeErrWant: "Fortran runtime error",
		syntaxErr:      "program main\n  print *, (\nend program main",
		syntaxErrWant:  "Error:",
		loop:           "program main\n  do\n  end do\nend program main",
		flood:          "program main\n  integer :: i\n  do i = 0, 19999\n    write (*, '(a, i6.6, a)') 'line ', i, ' xxxxxxxxxx'\n  end do\nend program main",
		compileErr:     "program main\n  integer :: n\n  n = 'not a number'\n  print *, n\nend program main",
	},
	"d": {
		hello:          "import std.stdio;\n\nvoid main() {\n    writeln(\"hello, world\");\n}",
		stdin:          "import std.stdio, std.string;\n\nvoid main() {\n    writeln(\"got: \", readln().chomp);\n}",
		args:           "import std.stdio, std.array;\n\nvoid main(string[] args) {\n    writeln(args[1 .. $].join(\" \"));\n}",
		exit3:          "int main() {\n    return 3;\n}",
		runtimeErr:     "import std.stdio;\n\nvoid main() {\n    writeln(\"before\");\n    stdout.flush();\n    throw new Exception(\"boom\");\n}",
		runtimeErrWant: "boom",
		syntaxErr:      "void main() {\n    int x = ;\n}",
		syntaxErrWant:  "error:",
		loop:           "void main() {\n    while (true) {}\n}",
		flood:          "import std.stdio;\n\nvoid main() {\n    foreach (i; 0 .. 20000) writefln(\"line %06d xxxxxxxxxx\", i);\n}",
		compileErr:     "void main() {\n    int n = \"not a number\";\n}",
	},
	"pascal": {
		hello:          "program main;\nbegin\n  writeln('hello, world');\nend.",
		stdin:          "program main;\nvar l: string;\nbegin\n  readln(l);\n  writeln('got: ', l);\nend.",
		args:           "program main;\nvar\n  i: longint;\n  s: ansistring;\nbegin\n  s := '';\n  for i := 1 to ParamCount do\n  begin\n    if i > 1 then s := s + ' ';\n    s := s + ParamStr(i);\n  end;\n  writeln(s);\nend.",
		exit3:          "program main;\nbegin\n  halt(3);\nend.",
		runtimeErr:     "program main;\nvar a, b: longint;\nbegin\n  writeln('before');\n  a := 1;\n  b := ParamCount;\n  writeln(a div b);\nend.",
		runtimeErrWant: "Runtime error 200",
		syntaxErr:      "program main;\nbegin\n  writeln('x'\nend.",
		syntaxErrWant:  "Syntax error",
		loop:           "program main;\nbegin\n  while true do ;\nend.",
		flood:          "program main;\nuses SysUtils;\nvar i: longint;\nbegin\n  for i := 0 to 19999 do\n    writeln(Format('line %.6d xxxxxxxxxx', [i]));\nend.",
		compileErr:     "program main;\nvar n: longint;\nbegin\n  n := 'not a number';\n  writeln(n);\nend.",
	},
	"java": {
		hello:          "public class Main {\n    public static void main(String[] args) {\n        System.out.println(\"hello, world\");\n    }\n}",
		stdin:          "import java.io.*;\n\npublic class Main {\n    public static void main(String[] args) throws IOException {\n        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));\n        System.out.println(\"got: \" + in.readLine());\n    }\n}",
		args:           "public class Main {\n    public static void main(String[] args) {\n        System.out.println(String.join(\" \", args));\n    }\n}",
		exit3:          "public class Main {\n    public static void main(String[] args) {\n        System.exit(3);\n    }\n}",
		runtimeErr:     "public class Main {\n    public static void main(String[] args) {\n        System.out.println(\"before\");\n        Object o = null;\n        System.out.println(o.hashCode());\n    }\n}",
		runtimeErrWant: "NullPointerException",
		syntaxErr:      "public class Main {\n    void f( }\n}",
		syntaxErrWant:  "error:",
		loop:           "public class Main {\n    public static void main(String[] args) {\n        while (true) {}\n    }\n}",
		flood:          "public class Main {\n    public static void main(String[] args) {\n        StringBuilder sb = new StringBuilder();\n        for (int i = 0; i < 20000; i++) sb.append(String.format(\"line %06d xxxxxxxxxx%n\", i));\n        System.out.print(sb);\n    }\n}",
		compileErr:     "public class Main {\n    public static void main(String[] args) {\n        int n = \"not a number\";\n    }\n}",
	},
	"kotlin": {
		hello:          "fun main() {\n    println(\"hello, world\")\n}",
		stdin:          "fun main() {\n    println(\"got: \" + readLine())\n}",
		args:           "fun main(args: Array<String>) {\n    println(args.joinToString(\" \"))\n}",
		exit3:          "import kotlin.system.exitProcess\n\nfun main() {\n    exitProcess(3)\n}",
		runtimeErr:     "fun main(args: Array<String>) {\n    println(\"before\")\n    val s: String? = args.firstOrNull()\n    println(s!!.length)\n}",
		runtimeErrWant: "NullPointerException",
		syntaxErr:      "fun main() {\n    val = \n}",
		syntaxErrWant:  "error:",
		loop:           "fun main() {\n    while (true) {}\n}",
		flood:          "fun main() {\n    val sb = StringBuilder()\n    for (i in 0 until 20000) sb.append(String.format(\"line %06d xxxxxxxxxx\\n\", i))\n    print(sb)\n}",
		compileErr:     "fun main() {\n    val n: Int = \"not a number\"\n    println(n)\n}",
	},
	"clojure": {
		hello:          "(println \"hello, world\")",
		stdin:          "(println (str \"got: \" (read-line)))",
		args:           "(require '[clojure.string :as str])\n(println (str/join \" \" *command-line-args*))",
		exit3:          "(System/exit 3)",
		runtimeErr:     "(println \"before\")\n(println (/ 1 (count *command-line-args*)))",
		runtimeErrWant: "ArithmeticException",
		syntaxErr:      "(println \"x\"",
		syntaxErrWant:  "EOF while reading",
		loop:           "(loop [] (recur))",
		flood:          "(dotimes [i 20000] (printf \"line %06d xxxxxxxxxx\\n\" i))\n(flush)",
	},
	"csharp": {
		hello:          "using System;\n\nclass Program\n{\n    static void Main()\n    {\n        Console.WriteLine(\"hello, world\");\n    }\n}",
		stdin:          "using System;\n\nclass Program\n{\n    static void Main()\n    {\n        Console.WriteLine(\"got: \" + Console.ReadLine());\n    }\n}",
		args:           "using System;\n\nclass Program\n{\n    static void Main(string[] args)\n    {\n        Console.WriteLine(string.Join(\" \", args));\n    }\n}",
		exit3:          "class Program\n{\n    static int Main()\n    {\n        return 3;\n    }\n}",
		runtimeErr:     "using System;\n\nclass Program\n{\n    static void Main(string[] args)\n    {\n        Console.WriteLine(\"before\");\n        Console.WriteLine(1 / args.Length);\n    }\n}",
		runtimeErrWant: "DivideByZeroException",
		syntaxErr:      "class Program\n{\n    static void Main()\n    {\n        int x = ;\n    }\n}",
		syntaxErrWant:  "error CS",
		loop:           "class Program\n{\n    static void Main()\n    {\n        while (true) {}\n    }\n}",
		flood:          "using System;\nusing System.Text;\n\nclass Program\n{\n    static void Main()\n    {\n        var sb = new StringBuilder();\n        for (int i = 0; i < 20000; i++) sb.AppendFormat(\"line {0:D6} xxxxxxxxxx\\n\", i);\n        Console.Write(sb);\n    }\n}",
		compileErr:     "class Program\n{\n    static void Main()\n    {\n        int n = \"not a number\";\n    }\n}",
	},
	"ruby": {
		hello:          "puts 'hello, world'",
		stdin:          "puts \"got: #{$stdin.gets.chomp}\"",
		args:           "puts ARGV.join(' ')",
		exit3:          "exit 3",
		runtimeErr:     "puts 'before'\n1 / 0",
		runtimeErrWant: "ZeroDivisionError",
		syntaxErr:      "def f(\n",
		syntaxErrWant:  "syntax error",
		loop:           "loop {}",
		flood:          "20000.times { |i| printf(\"line %06d xxxxxxxxxx\\n\", i) }",
	},
	"php": {
		hello:          "<?php\necho \"hello, world\\n\";",
		stdin:          "<?php\n$l = rtrim(fgets(STDIN), \"\\n\");\necho \"got: $l\\n\";",
		args:           "<?php\necho implode(' ', array_slice($argv, 1)), \"\\n\";",
		exit3:          "<?php\nexit(3);",
		runtimeErr:     "<?php\necho \"before\\n\";\necho intdiv(1, 0);",
		runtimeErrWant: "DivisionByZeroError",
		syntaxErr:      "<?php\nfunction (\n",
		syntaxErrWant:  "Parse error",
		loop:           "<?php\nwhile (true) {}",
		flood:          "<?php\nfor ($i = 0; $i < 20000; $i++) printf(\"line %06d xxxxxxxxxx\\n\", $i);",
	},
	"perl": {
		hello:          "print \"hello, world\\n\";",
		stdin:          "my $l = <STDIN>;\nchomp $l;\nprint \"got: $l\\n\";",
		args:           "print join(' ', @ARGV), \"\\n\";",
		exit3:          "exit 3;",
		runtimeErr:     "print \"before\\n\";\nmy $x = 0;\nprint 1 / $x;",
		runtimeErrWant: "Illegal division by zero",
		syntaxErr:      "my $x = ;",
		syntaxErrWant:  "syntax error",
		loop:           "1 while 1;",
		flood:          "printf(\"line %06d xxxxxxxxxx\\n\", $_) for 0 .. 19999;",
	},
	"lua": {
		hello:          "print(\"hello, world\")",
		stdin:          "local l = io.read(\"l\")\nprint(\"got: \" .. l)",
		args:           "print(table.concat(arg, \" \"))",
		exit3:          "os.exit(3)",
		runtimeErr:     "print(\"before\")\nerror(\"boom\")",
		runtimeErrWant: "boom",
		syntaxErr:      "x = = 1",
		syntaxErrWant:  "unexpected symbol",
		loop:           "while true do end",
		flood:          "for i = 0, 19999 do io.write(string.format(\"line %06d xxxxxxxxxx\\n\", i)) end",
	},
	"tcl": {
		hello:          "puts \"hello, world\"",
		stdin:          "gets stdin l\nputs \"got: $l\"",
		args:           "puts [join $argv \" \"]",
		exit3:          "exit 3",
		runtimeErr:     "puts before\nerror boom",
		runtimeErrWant: "boom",
		syntaxErr:      "if {1} {",
		syntaxErrWant:  "missing close-brace",
		loop:           "while 1 {}",
		flood:          "for {set i 0} {$i < 20000} {incr i} {\n    puts [format \"line %06d xxxxxxxxxx\" $i]\n}",
	},
	"awk": {
		hello:          "BEGIN { print \"hello, world\" }",
		stdin:          "NR == 1 { print \"got: \" $0; exit }",
		args:           "BEGIN {\n    s = ARGV[1]\n    for (i = 2; i < ARGC; i++) s = s \" \" ARGV[i]\n    print s\n}",
		exit3:          "BEGIN { exit 3 }",
		runtimeErr:     "BEGIN { print \"before\"; x = 0; print 1 / x }",
		runtimeErrWant: "division by zero",
		syntaxErr:      "BEGIN { print ( }",
		syntaxErrWant:  "syntax error",
		loop:           "BEGIN { while (1) {} }",
		flood:          "BEGIN { for (i = 0; i < 20000; i++) printf \"line %06d xxxxxxxxxx\\n\", i }",
	},
	"sql": {
		hello:          "SELECT 'hello, world';",
		stdin:          "CREATE TABLE input(line TEXT);\n.import --csv /dev/stdin input\nSELECT 'got: ' || line FROM input ORDER BY rowid LIMIT 1;",
		exit3:          "SELECT 1 WHERE 0;\n.exit 3",
		runtimeErr:     "SELECT 'before';\nSELECT abs(-9223372036854775808);",
		runtimeErrWant: "integer overflow",
		syntaxErr:      "SELEC 1;",
		syntaxErrWant:  "syntax error",
		loop:           "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c;",
		flood:          "WITH RECURSIVE c(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM c WHERE i < 19999)\nSELECT printf('line %06d xxxxxxxxxx', i) FROM c;",
	},
	"r": {
		hello:          "cat(\"hello, world\\n\")",
		stdin:          "l <- readLines(file(\"stdin\"), n = 1)\ncat(\"got: \", l, \"\\n\", sep = \"\")",
		args:           "cat(paste(commandArgs(trailingOnly = TRUE), collapse = \" \"), \"\\n\", sep = \"\")",
		exit3:          "quit(status = 3)",
		runtimeErr:     "cat(\"before\\n\")\nstop(\"boom\")",
		runtimeErrWant: "boom",
		syntaxErr:      "x <- (1",
		syntaxErrWant:  "unexpected",
		loop:           "repeat {}",
		flood:          "cat(sprintf(\"line %06d xxxxxxxxxx\\n\", 0:19999), sep = \"\")",
	},
	"haskell": {
		hello:          "main :: IO ()\nmain = putStrLn \"hello, world\"",
		stdin:          "main :: IO ()\nmain = do\n  l <- getLine\n  putStrLn (\"got: \" ++ l)",
		args:           "import System.Environment (getArgs)\n\nmain :: IO ()\nmain = getArgs >>= putStrLn . unwords",
		exit3:          "import System.Exit\n\nmain :: IO ()\nmain = exitWith (ExitFailure 3)",
		runtimeErr:     "main :: IO ()\nmain = do\n  putStrLn \"before\"\n  error \"boom\"",
		runtimeErrWant: "boom",
		syntaxErr:      "main = do (\n",
		syntaxErrWant:  "parse error",
		loop:           "main :: IO ()\nmain = go 0\n  where\n    go :: Int -> IO ()\n    go n = go (n + 1)",
		flood:          "import Text.Printf (printf)\n\nmain :: IO ()\nmain = mapM_ (\\i -> printf \"line %06d xxxxxxxxxx\\n\" (i :: Int)) [0 .. 19999]",
		compileErr:     "main :: IO ()\nmain = putStrLn (length \"not a string\")",
	},
	"ocaml": {
		hello:          "let () = print_endline \"hello, world\"",
		stdin:          "let () = print_endline (\"got: \" ^ read_line ())",
		args:           "let () = print_endline (String.concat \" \" (List.tl (Array.to_list Sys.argv)))",
		exit3:          "let () = exit 3",
		runtimeErr:     "let () =\n  print_endline \"before\";\n  print_int (1 / (Array.length Sys.argv - 1))",
		runtimeErrWant: "Division_by_zero",
		syntaxErr:      "let let = ",
		syntaxErrWant:  "Syntax error",
		loop:           "let () =\n  let rec loop () = loop () in\n  loop ()",
		flood:          "let () =\n  for i = 0 to 19999 do\n    Printf.printf \"line %06d xxxxxxxxxx\\n\" i\n  done",
		compileErr:     "let () = print_int \"not a number\"",
	},
	"commonlisp": {
		hello:          "(write-line \"hello, world\")",
		stdin:          "(format t \"got: ~a~%\" (read-line))",
		args:           "(format t \"~{~a~^ ~}~%\" (cdr sb-ext:*posix-argv*))",
		exit3:          "(sb-ext:exit :code 3)",
		runtimeErr:     "(write-line \"before\")\n(print (/ 1 (length (cdr sb-ext:*posix-argv*))))",
		runtimeErrWant: "DIVISION-BY-ZERO",
		syntaxErr:      "(write-line \"x\"",
		syntaxErrWant:  "READ error",
		loop:           "(loop)",
		flood:          "(dotimes (i 20000) (format t \"line ~6,'0d xxxxxxxxxx~%\" i))",
	},
	"prolog": {
		hello:          ":- initialization(main, main).\n\nmain :- writeln('hello, world').",
		stdin:          ":- initialization(main, main).\n\nmain :-\n    read_line_to_string(user_input, L),\n    format(\"got: ~w~n\", [L]).",
		args:           ":- initialization(main, main).\n\nmain :-\n    current_prolog_flag(argv, Args),\n    atomic_list_concat(Args, ' ', S),\n    writeln(S).",
		exit3:          ":- initialization(main, main).\n\nmain :- halt(3).",
		runtimeErr:     ":- initialization(main, main).\n\nmain :-\n    writeln(before),\n    X is 1 / 0,\n    writeln(X).",
		runtimeErrWant: "zero_divisor",
		syntaxErr:      ":- initialization(main, main).\n\nmain :- writeln(before) oops.",
		syntaxErrWant:  "Syntax error",
		loop:           ":- initialization(main, main).\n\nmain :- repeat, fail.",
		flood:          ":- initialization(main, main).\n\nmain :-\n    forall(between(0, 19999, I),\n           format(\"line ~|~`0t~d~6+ xxxxxxxxxx~n\", [I])).",
	},
	"erlang": {
		hello:          "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    io:format(\"hello, world~n\").",
		stdin:          "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    L = io:get_line(\"\"),\n    io:format(\"got: ~s~n\", [string:trim(L, trailing, \"\\n\")]).",
		args:           "-module(main).\n-export([main/1]).\n\nmain(Args) ->\n    io:format(\"~s~n\", [lists:join(\" \", Args)]).",
		exit3:          "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    halt(3).",
		runtimeErr:     "-module(main).\n-export([main/1]).\n\nmain(Args) ->\n    io:format(\"before~n\"),\n    io:format(\"~p~n\", [1 div length(Args)]).",
		runtimeErrWant: "arithmetic expression",
		syntaxErr:      "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    io:format(\"x\"",
		syntaxErrWant:  "syntax error",
		loop:           "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    loop().\n\nloop() ->\n    loop().",
		flood:          "-module(main).\n-export([main/1]).\n\nmain(_) ->\n    lists:foreach(fun(I) -> io:format(\"line ~6..0w xxxxxxxxxx~n\", [I]) end, lists:seq(0, 19999)).",
	},
	"elixir": {
		hello:          "IO.puts(\"hello, world\")",
		stdin:          "IO.puts(\"got: \" <> String.trim_trailing(IO.gets(\"\"), \"\\n\"))",
		args:           "IO.puts(Enum.join(System.argv(), \" \"))",
		exit3:          "System.halt(3)",
		runtimeErr:     "IO.puts(\"before\")\nraise \"boom\"",
		runtimeErrWant: "RuntimeError",
		syntaxErr:      "IO.puts(\"x\"",
		syntaxErrWant:  "missing terminator",
		loop:           "defmodule Spin do\n  def loop, do: loop()\nend\n\nSpin.loop()",
		flood:          "for i <- 0..19999, do: IO.puts(\"line \" <> String.pad_leading(Integer.to_string(i), 6, \"0\") <> \" xxxxxxxxxx\")",
	},
	"scheme": {
		hello:          "(display \"hello, world\")\n(newline)",
		stdin:          "(display (string-append \"got: \" (get-line (current-input-port))))\n(newline)",
		args:           "(define (join words)\n  (if (null? words)\n      \"\"\n      (fold-left (lambda (acc w) (string-append acc \" \" w)) (car words) (cdr words))))\n(display (join (cdr (command-line))))\n(newline)",
		exit3:          "(exit 3)",
		runtimeErr:     "(display \"before\")\n(newline)\n(car '())",
		runtimeErrWant: "not a pair",
		syntaxErr:      "(display \"x\"",
		syntaxErrWant:  "end-of-file",
		loop:           "(let loop () (loop))",
		flood:          "(define (pad n)\n  (let ((s (number->string n)))\n    (string-append (make-string (- 6 (string-length s)) #\\0) s)))\n(do ((i 0 (+ i 1))) ((= i 20000))\n  (display (string-append \"line \" (pad i) \" xxxxxxxxxx\\n\")))",
	},
	"racket": {
		hello:          "#lang racket/base\n\n(displayln \"hello, world\")",
		stdin:          "#lang racket/base\n\n(printf \"got: ~a\\n\" (read-line))",
		args:           "#lang racket/base\n(require racket/string)\n\n(displayln (string-join (vector->list (current-command-line-arguments)) \" \"))",
		exit3:          "#lang racket/base\n\n(exit 3)",
		runtimeErr:     "#lang racket/base\n\n(displayln \"before\")\n(car '())",
		runtimeErrWant: "car: contract violation",
		syntaxErr:      "#lang racket/base\n\n(displayln \"x\"",
		syntaxErrWant:  "read-syntax",
		loop:           "#lang racket/base\n\n(let loop () (loop))",
		flood:          "#lang racket/base\n(require racket/format)\n\n(for ([i (in-range 20000)])\n  (printf \"line ~a xxxxxxxxxx\\n\" (~r i #:min-width 6 #:pad-string \"0\")))",
	},
	"octave": {
		hello:          "printf(\"hello, world\\n\");",
		stdin:          "line = fgetl(stdin);\nprintf(\"got: %s\\n\", line);",
		args:           "args = argv();\nprintf(\"%s\\n\", strjoin(args', \" \"));",
		exit3:          "exit(3);",
		runtimeErr:     "printf(\"before\\n\");\nx = [1 2 3];\ndisp(x(5));",
		runtimeErrWant: "out of bound",
		syntaxErr:      "x = (1 + ;",
		syntaxErrWant:  "parse error",
		loop:           "while true\nend",
		flood:          "for i = 0:19999\n  printf(\"line %06d xxxxxxxxxx\\n\", i);\nend",
	},
	"raku": {
		hello:          "say 'hello, world';",
		stdin:          "my $line = $*IN.get;\nsay \"got: $line\";",
		args:           "say @*ARGS.join(' ');",
		exit3:          "exit 3;",
		runtimeErr:     "say 'before';\nsay 1 div 0;",
		runtimeErrWant: "divide",
		syntaxErr:      "say (1 + ;",
		syntaxErrWant:  "SORRY",
		loop:           "loop { }",
		flood:          "for ^20000 -> $i {\n    printf \"line %06d xxxxxxxxxx\\n\", $i;\n}",
	},
	"crystal": {
		hello:          "puts \"hello, world\"",
		stdin:          "line = gets\nputs \"got: #{line}\"",
		args:           "puts ARGV.join(\" \")",
		exit3:          "exit 3",
		runtimeErr:     "puts \"before\"\nnumbers = [1, 2, 3]\nputs numbers[5]",
		runtimeErrWant: "IndexError",
		syntaxErr:      "puts \"x\"\nputs (",
		syntaxErrWant:  "unexpected token",
		loop:           "loop do\nend",
		flood:          "20000.times do |i|\n  printf(\"line %06d xxxxxxxxxx\\n\", i)\nend",
		compileErr:     "puts undeclared_variable",
	},
	"vala": {
		hello:          "void main () {\n    print (\"hello, world\\n\");\n}",
		stdin:          "void main () {\n    string? line = stdin.read_line ();\n    print (\"got: %s\\n\", line);\n}",
		args:           "int main (string[] args) {\n    var words = new StringBuilder ();\n    for (int i = 1; i < args.length; i++) {\n        if (i > 1) {\n            words.append_c (' ');\n        }\n        words.append (args[i]);\n    }\n    print (\"%s\\n\", words.str);\n    return 0;\n}",
		exit3:          "int main () {\n    return 3;\n}",
		runtimeErr:     "void main () {\n    print (\"before\\n\");\n    int n = 2;\n    assert (n > 5);\n}",
		runtimeErrWant: "assertion failed",
		syntaxErr:      "void main () {\n    print (\"x\"\n}",
		syntaxErrWant:  "syntax error",
		loop:           "void main () {\n    while (true) {\n    }\n}",
		flood:          "void main () {\n    for (int i = 0; i < 20000; i++) {\n        stdout.printf (\"line %06d xxxxxxxxxx\\n\", i);\n    }\n}",
		compileErr:     "void main () {\n    print (\"%d\\n\", undeclared_variable);\n}",
	},
	"deno": {
		hello:          "const greeting: string = 'hello, world';\nconsole.log(greeting);",
		stdin:          "const text: string = await new Response(Deno.stdin.readable).text();\nconsole.log(`got: ${text.split('\\n')[0]}`);",
		args:           "console.log(Deno.args.join(' '));",
		exit3:          "Deno.exit(3);",
		runtimeErr:     "console.log('before');\nthrow new Error('boom');",
		runtimeErrWant: "boom",
		syntaxErr:      "const = ;",
		syntaxErrWant:  "SyntaxError",
		loop:           "while (true) {}",
		flood:          "for (let i = 0; i < 20000; i++) console.log(`line ${String(i).padStart(6, '0')} xxxxxxxxxx`);",
	},
	"bun": {
		hello:          "const greeting: string = 'hello, world';\nconsole.log(greeting);",
		stdin:          "const text: string = await Bun.stdin.text();\nconsole.log(`got: ${text.split('\\n')[0]}`);",
		args:           "console.log(Bun.argv.slice(2).join(' '));",
		exit3:          "process.exit(3);",
		runtimeErr:     "console.log('before');\nthrow new Error('boom');",
		runtimeErrWant: "boom",
		syntaxErr:      "const = ;",
		syntaxErrWant:  "error:",
		loop:           "while (true) {}",
		flood:          "for (let i = 0; i < 20000; i++) console.log(`line ${String(i).padStart(6, '0')} xxxxxxxxxx`);",
	},
	"coffeescript": {
		hello:          "console.log 'hello, world'",
		stdin:          "fs = require 'fs'\n[line] = fs.readFileSync(0, 'utf8').split '\\n'\nconsole.log \"got: #{line}\"",
		args:           "console.log process.argv[2..].join ' '",
		exit3:          "process.exit 3",
		runtimeErr:     "console.log 'before'\nthrow new Error 'boom'",
		runtimeErrWant: "boom",
		syntaxErr:      "x = (\n",
		syntaxErrWant:  "error:",
		loop:           "loop\n  null",
		flood:          "for i in [0...20000]\n  console.log \"line #{String(i).padStart 6, '0'} xxxxxxxxxx\"",
	},
	"swift": {
		hello:          "print(\"hello, world\")",
		stdin:          "if let line = readLine() {\n    print(\"got: \\(line)\")\n}",
		args:           "print(CommandLine.arguments.dropFirst().joined(separator: \" \"))",
		exit3:          "import Foundation\n\nexit(3)",
		runtimeErr:     "import Foundation\n\nprint(\"before\")\nfflush(stdout)\nlet numbers = [1, 2, 3]\nlet index = CommandLine.arguments.count + 4\nprint(numbers[index])",
		runtimeErrWant: "Index out of range",
		syntaxErr:      "print(\"x\"\nlet = 1",
		syntaxErrWant:  "error:",
		loop:           "while true {\n}",
		flood:          "var out = \"\"\nfor i in 0..<20000 {\n    let digits = String(i)\n    out += \"line \" + String(repeating: \"0\", count: 6 - digits.count) + digits + \" xxxxxxxxxx\\n\"\n}\nprint(out, terminator: \"\")",
		compileErr:     "let n: Int = \"not a number\"\nprint(n)",
	},
	"objective-c": {
		hello:          "#import <stdio.h>\n\nint main(void)\n{\n    printf(\"hello, world\\n\");\n    return 0;\n}",
		stdin:          "#import <stdio.h>\n#import <string.h>\n\nint main(void)\n{\n    char line[256];\n    if (!fgets(line, sizeof line, stdin)) return 1;\n    line[strcspn(line, \"\\n\")] = 0;\n    printf(\"got: %s\\n\", line);\n    return 0;\n}",
		args:           "#import <stdio.h>\n\nint main(int argc, char *argv[])\n{\n    for (int i = 1; i < argc; i++) printf(\"%s%s\", i > 1 ? \" \" : \"\", argv[i]);\n    printf(\"\\n\");\n    return 0;\n}",
		exit3:          "#import <stdlib.h>\n\nint main(void)\n{\n    exit(3);\n}",
		runtimeErr:     "#import <assert.h>\n#import <stdio.h>\n#import <objc/Object.h>\n#import <objc/runtime.h>\n\n@interface Stack : Object\n{\n    int items[8];\n    int count;\n}\n+ (id)new;\n- (int)pop;\n@end\n\n@implementation Stack\n+ (id)new\n{\n    return class_createInstance(self, 0);\n}\n- (int)pop\n{\n    assert(count > 0);\n    return items[--count];\n}\n@end\n\nint main(void)\n{\n    Stack *s = [Stack new];\n    printf(\"before\\n\");\n    fflush(stdout);\n    printf(\"%d\\n\", [s pop]);\n    return 0;\n}",
		runtimeErrWant: "Assertion",
		syntaxErr:      "@interface Point : Object\n- (int)x\n@end",
		syntaxErrWant:  "error:",
		loop:           "int main(void)\n{\n    volatile int forever = 1;\n    while (forever) {}\n    return 0;\n}",
		flood:          "#import <stdio.h>\n\nint main(void)\n{\n    for (int i = 0; i < 20000; i++) printf(\"line %06d xxxxxxxxxx\\n\", i);\n    return 0;\n}",
		compileErr:     "#import <objc/Object.h>\n\n@interface Point : Object\n- (int)x;\n@end\n\nint main(void)\n{\n    return undeclared_variable;\n}",
	},
	"scala": {
		hello:          "object Main {\n  def main(args: Array[String]): Unit = println(\"hello, world\")\n}",
		stdin:          "object Main {\n  def main(args: Array[String]): Unit = {\n    val l = scala.io.StdIn.readLine()\n    println(s\"got: $l\")\n  }\n}",
		args:           "object Main extends App {\n  println(args.mkString(\" \"))\n}",
		exit3:          "object Main {\n  def main(args: Array[String]): Unit = sys.exit(3)\n}",
		runtimeErr:     "object Main {\n  def main(args: Array[String]): Unit = {\n    println(\"before\")\n    throw new IllegalStateException(\"boom\")\n  }\n}",
		runtimeErrWant: "boom",
		syntaxErr:      "object Main {\n  def main(args: Array[String]): Unit = {\n    val = 1\n  }\n}",
		syntaxErrWant:  "error:",
		loop:           "object Main {\n  def main(args: Array[String]): Unit = while (true) {}\n}",
		flood:          "object Main {\n  def main(args: Array[String]): Unit = {\n    val sb = new StringBuilder\n    for (i <- 0 until 20000) sb ++= f\"line $i%06d xxxxxxxxxx\\n\"\n    print(sb)\n  }\n}",
		compileErr:     "object Main {\n  def main(args: Array[String]): Unit = {\n    val n: Int = \"not a number\"\n    println(n)\n  }\n}",
	},
	"groovy": {
		hello:          "println 'hello, world'",
		stdin:          "def l = System.in.newReader().readLine()\nprintln \"got: $l\"",
		args:           "println args.join(' ')",
		exit3:          "System.exit(3)",
		runtimeErr:     "println 'before'\nthrow new IllegalStateException('boom')",
		runtimeErrWant: "boom",
		syntaxErr:      "def x = (\n",
		syntaxErrWant:  "startup failed",
		loop:           "while (true) {}",
		flood:          "def sb = new StringBuilder()\n20000.times { sb << String.format('line %06d xxxxxxxxxx%n', it) }\nprint sb",
	},
	"ada": {
		hello:          "with Ada.Text_IO;\n\nprocedure Main is\nbegin\n   Ada.Text_IO.Put_Line (\"hello, world\");\nend Main;",
		stdin:          "with Ada.Text_IO; use Ada.Text_IO;\n\nprocedure Main is\n   Line : constant String := Get_Line;\nbegin\n   Put_Line (\"got: \" & Line);\nend Main;",
		args:           "with Ada.Text_IO;        use Ada.Text_IO;\nwith Ada.Command_Line;   use Ada.Command_Line;\n\nprocedure Main is\nbegin\n   for I in 1 .. Argument_Count loop\n      if I > 1 then\n         Put (\" \");\n      end if;\n      Put (Argument (I));\n   end loop;\n   New_Line;\nend Main;",
		exit3:          "with Ada.Command_Line;\n\nprocedure Main is\nbegin\n   Ada.Command_Line.Set_Exit_Status (3);\nend Main;",
		runtimeErr:     "with Ada.Text_IO;\nwith Ada.Command_Line;\n\nprocedure Main is\n   Items : array (1 .. 3) of Integer := (others => 0);\n   Index : constant Integer := Ada.Command_Line.Argument_Count + 5;\nbegin\n   Ada.Text_IO.Put_Line (\"before\");\n   Items (Index) := 1;\n   Ada.Text_IO.Put_Line (Integer'Image (Items (1)));\nend Main;",
		runtimeErrWant: "CONSTRAINT_ERROR",
		syntaxErr:      "procedure Main is\nbegin\n   X := ;\nend Main;",
		syntaxErrWant:  "error:",
		loop:           "procedure Main is\nbegin\n   loop\n      null;\n   end loop;\nend Main;",
		flood:          "with Ada.Text_IO; use Ada.Text_IO;\n\nprocedure Main is\nbegin\n   for I in 0 .. 19_999 loop\n      declare\n         Img : constant String := Integer'Image (1_000_000 + I);\n      begin\n         Put_Line (\"line \" & Img (3 .. 8) & \" xxxxxxxxxx\");\n      end;\n   end loop;\nend Main;",
		compileErr:     "with Ada.Text_IO;\n\nprocedure Main is\n   N : Integer := \"not a number\";\nbegin\n   Ada.Text_IO.Put_Line (Integer'Image (N));\nend Main;",
	},
	"cobol": {
		hello:          "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           DISPLAY \"hello, world\"\n           STOP RUN.\n",
		stdin:          "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       DATA DIVISION.\n       WORKING-STORAGE SECTION.\n       01 WS-LINE PIC X(80).\n       PROCEDURE DIVISION.\n           ACCEPT WS-LINE\n           DISPLAY \"got: \" FUNCTION TRIM(WS-LINE TRAILING)\n           STOP RUN.\n",
		args:           "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       DATA DIVISION.\n       WORKING-STORAGE SECTION.\n       01 WS-ARGS PIC X(200).\n       PROCEDURE DIVISION.\n           ACCEPT WS-ARGS FROM COMMAND-LINE\n           DISPLAY FUNCTION TRIM(WS-ARGS TRAILING)\n           STOP RUN.\n",
		exit3:          "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           MOVE 3 TO RETURN-CODE\n           STOP RUN.\n",
		runtimeErr:     "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           DISPLAY \"before\"\n           CALL \"NO-SUCH-PROGRAM\"\n           STOP RUN.\n",
		runtimeErrWant: "not found",
		syntaxErr:      "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           DISPLAY \"unterminated\n           STOP RUN.\n",
		syntaxErrWant:  "error:",
		loop:           "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           PERFORM UNTIL 1 = 2\n               CONTINUE\n           END-PERFORM\n           STOP RUN.\n",
		flood:          "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       DATA DIVISION.\n       WORKING-STORAGE SECTION.\n       01 WS-I PIC 9(6).\n       PROCEDURE DIVISION.\n           PERFORM VARYING WS-I FROM 0 BY 1 UNTIL WS-I > 19999\n               DISPLAY \"line \" WS-I \" xxxxxxxxxx\"\n           END-PERFORM\n           STOP RUN.\n",
		compileErr:     "       IDENTIFICATION DIVISION.\n       PROGRAM-ID. MAIN.\n       PROCEDURE DIVISION.\n           MOVE 1 TO WS-UNDECLARED\n           STOP RUN.\n",
	},
	"asm": {
		hello:            "        global  _start\n\n        section .text\n_start: mov     eax, 1          ; write(1, message, length)\n        mov     edi, 1\n        mov     rsi, message\n        mov     edx, length\n        syscall\n        mov     eax, 60         ; exit(0)\n        xor     edi, edi\n        syscall\n\n        section .rodata\nmessage: db     \"hello, world\", 10\nlength: equ     $ - message\n",
		stdin:            "        global  _start\n\n        section .bss\nbuffer: resb    257\n\n        section .rodata\nprefix: db      \"got: \"\n\n        section .text\n_start: xor     eax, eax        ; read(0, buffer, 256)\n        xor     edi, edi\n        mov     rsi, buffer\n        mov     edx, 256\n        syscall\n        xor     ebx, ebx        ; rbx: length of the first line\n.scan:  cmp     rbx, rax\n        jge     .found\n        cmp     byte [buffer + rbx], 10\n        je      .found\n        inc     rbx\n        jmp     .scan\n.found: mov     byte [buffer + rbx], 10\n        inc     rbx\n        mov     eax, 1\n        mov     edi, 1\n        mov     rsi, prefix\n        mov     edx, 5\n        syscall\n        mov     eax, 1\n        mov     edi, 1\n        mov     rsi, buffer\n        mov     rdx, rbx\n        syscall\n        mov     eax, 60\n        xor     edi, edi\n        syscall\n",
		args:             "        global  _start\n\n        section .rodata\nspace:  db      \" \"\nnewline: db     10\n\n        section .text\n_start: mov     r12, [rsp]      ; argc\n        lea     r13, [rsp + 16] ; &argv[1]\n        mov     r14, 1\n.next:  cmp     r14, r12\n        jge     .done\n        cmp     r14, 1\n        je      .word\n        mov     eax, 1\n        mov     edi, 1\n        mov     rsi, space\n        mov     edx, 1\n        syscall\n.word:  mov     rsi, [r13]\n        xor     edx, edx\n.len:   cmp     byte [rsi + rdx], 0\n        je      .write\n        inc     rdx\n        jmp     .len\n.write: mov     eax, 1\n        mov     edi, 1\n        syscall\n        add     r13, 8\n        inc     r14\n        jmp     .next\n.done:  mov     eax, 1\n        mov     edi, 1\n        mov     rsi, newline\n        mov     edx, 1\n        syscall\n        mov     eax, 60\n        xor     edi, edi\n        syscall\n",
		exit3:            "        global  _start\n        section .text\n_start: mov     eax, 60\n        mov     edi, 3\n        syscall\n",
		runtimeErr:       "        global  _start\n        section .text\n_start: mov     eax, 1\n        mov     edi, 1\n        mov     rsi, message\n        mov     edx, 7\n        syscall\n        mov     rax, [0]        ; a null pointer: SIGSEGV\n        section .rodata\nmessage: db     \"before\", 10\n",
		runtimeErrSignal: "SIGSEGV",
		syntaxErr:        "        global  _start\n        section .text\n_start: mov     rax,\n        syscall\n",
		syntaxErrWant:    "error:",
		loop:             "        global  _start\n        section .text\n_start: jmp     _start\n",
		flood:            "; the C library's printf from main, linked by gcc\n        global  main\n        extern  printf\n\n        section .rodata\nformat: db      \"line %06d xxxxxxxxxx\", 10, 0\n\n        section .text\nmain:   push    rbx\n        xor     ebx, ebx\n.loop:  lea     rdi, [rel format]\n        mov     esi, ebx\n        xor     eax, eax\n        call    printf\n        inc     ebx\n        cmp     ebx, 20000\n        jl      .loop\n        xor     eax, eax\n        pop     rbx\n        ret\n",
		compileErr:       "        global  _start\n        section .text\n_start: mov     rdi, undefined_symbol\n        mov     eax, 60\n        syscall\n",
	},
	"emacs-lisp": {
		hello:          "(princ \"hello, world\\n\")",
		stdin:          "(princ (format \"got: %s\\n\" (read-from-minibuffer \"\")))",
		args:           "(princ (concat (mapconcat #'identity command-line-args-left \" \") \"\\n\"))\n(setq command-line-args-left nil)",
		exit3:          "(kill-emacs 3)",
		runtimeErr:     "(princ \"before\\n\")\n(car 1)",
		runtimeErrWant: "Wrong type argument",
		syntaxErr:      "(princ \"x\"",
		syntaxErrWant:  "End of file during parsing",
		loop:           "(while t)",
		flood:          "(dotimes (i 20000)\n  (princ (format \"line %06d xxxxxxxxxx\\n\" i)))",
	},
	"fennel": {
		hello:          "(print \"hello, world\")",
		stdin:          "(print (.. \"got: \" (io.read)))",
		args:           "(print (table.concat arg \" \"))",
		exit3:          "(os.exit 3)",
		runtimeErr:     "(print \"before\")\n(let [t nil]\n  (print (. t :x)))",
		runtimeErrWant: "attempt to index",
		syntaxErr:      "(print \"x\"",
		syntaxErrWant:  "Parse error",
		loop:           "(while true nil)",
		flood:          "(for [i 0 19999]\n  (print (string.format \"line %06d xxxxxxxxxx\" i)))",
	},
	"hy": {
		hello:          "(print \"hello, world\")",
		stdin:          "(print (+ \"got: \" (input)))",
		args:           "(import sys)\n\n(print (.join \" \" (cut sys.argv 1 None)))",
		exit3:          "(import sys)\n\n(sys.exit 3)",
		runtimeErr:     "(print \"before\")\n(get [1 2 3] 5)",
		runtimeErrWant: "IndexError",
		syntaxErr:      "(print \"x\"",
		syntaxErrWant:  "PrematureEndOfInput",
		loop:           "(while True)",
		flood:          "(for [i (range 20000)]\n  (print (.format \"line {:06d} xxxxxxxxxx\" i)))",
	},
	"jq": {
		hello:          "\"hello, world\"",
		stdin:          "\"got: \" + input",
		args:           "$ARGS.positional | join(\" \")",
		exit3:          "\"exiting\\n\" | halt_error(3)",
		runtimeErr:     "\"before\", (1 | .[0])",
		runtimeErrWant: "Cannot index",
		syntaxErr:      "\"x\" +",
		syntaxErrWant:  "syntax error",
		loop:           "0 | until(false; . + 1)",
		flood:          "range(20000) | tostring | \"line \" + \"000000\"[length:] + . + \" xxxxxxxxxx\"",
	},
	"basic": {
		hello:          "print \"hello, world\"",
		stdin:          "line input \"\" a$\nprint \"got: \" + a$",
		args:           "n = peek(\"arguments\")\nfor i = 1 to n\n  if i > 1 print \" \";\n  print peek$(\"argument\");\nnext i\nprint",
		exit3:          "exit 3",
		runtimeErr:     "print \"before\"\ndim a(3)\nprint a(10)",
		runtimeErrWant: "out of range",
		syntaxErr:      "print (1 + ",
		syntaxErrWant:  "syntax error",
		loop:           "do\nloop",
		flood:          "for i = 0 to 19999\n  print \"line \" + str$(i, \"%06.0f\") + \" xxxxxxxxxx\"\nnext i",
	},
	"brainfuck": {
		hello:         "++++++++++[>++++++++++<-]>++++.---.+++++++..+++.-------------------------------------------------------------------.------------.+++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++.--------.+++.------.--------.------------------------------------------------------------------------------------------.",
		stdin:         "++++++++++[>++++++++++<-]>+++.++++++++.+++++.----------------------------------------------------------.--------------------------.[-]>,----------[++++++++++.,----------]++++++++++.",
		syntaxErr:     "+[.",
		syntaxErrWant: "Unbalanced brackets",
		loop:          "+[]",
		flood:         "++++++++++>[-]++++++++++++++++++++++++++++++++++++++++++++++++>>>>>[-]++[<<<<[-]++++++++++++++++++++++++++++++++++++++++++++++++>>>>>[-]++++++++++[<<<<[-]++++++++++++++++++++++++++++++++++++++++++++++++>>>>>[-]++++++++++[<<<<[-]++++++++++++++++++++++++++++++++++++++++++++++++>>>>>[-]++++++++++[<<<<[-]++++++++++++++++++++++++++++++++++++++++++++++++>>>>>[-]++++++++++[<<<<<<<<<<++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++.---.+++++.---------.---------------------------------------------------------------------.++++++++++++++++.>.>.>.>.>.<<<<<----------------.++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++++..........--------------------------------------------------------------------------------------------------------------.>>>>>+>>>>>-]<<<<<<+>>>>>-]<<<<<<+>>>>>-]<<<<<<+>>>>>-]<<<<<<+>>>>>-]",
	},
	"llvm-ir": {
		hello:            "@msg = private constant [13 x i8] c\"hello, world\\00\"\n\ndeclare i32 @puts(ptr)\n\ndefine i32 @main() {\n  call i32 @puts(ptr @msg)\n  ret i32 0\n}",
		stdin:            "@stdin = external global ptr\n@fmt = private constant [8 x i8] c\"got: %s\\00\"\n\ndeclare ptr @fgets(ptr, i32, ptr)\ndeclare i32 @printf(ptr, ...)\n\ndefine i32 @main() {\n  %buf = alloca [256 x i8]\n  %in = load ptr, ptr @stdin\n  %line = call ptr @fgets(ptr %buf, i32 256, ptr %in)\n  call i32 (ptr, ...) @printf(ptr @fmt, ptr %buf)\n  ret i32 0\n}",
		args:             "@word = private constant [3 x i8] c\"%s\\00\"\n@space = private constant [4 x i8] c\" %s\\00\"\n\ndeclare i32 @printf(ptr, ...)\ndeclare i32 @putchar(i32)\n\ndefine i32 @main(i32 %argc, ptr %argv) {\nentry:\n  br label %check\n\ncheck:\n  %i = phi i32 [ 1, %entry ], [ %next, %body ]\n  %more = icmp slt i32 %i, %argc\n  br i1 %more, label %body, label %done\n\nbody:\n  %idx = sext i32 %i to i64\n  %slot = getelementptr ptr, ptr %argv, i64 %idx\n  %arg = load ptr, ptr %slot\n  %first = icmp eq i32 %i, 1\n  %fmt = select i1 %first, ptr @word, ptr @space\n  call i32 (ptr, ...) @printf(ptr %fmt, ptr %arg)\n  %next = add i32 %i, 1\n  br label %check\n\ndone:\n  call i32 @putchar(i32 10)\n  ret i32 0\n}",
		exit3:            "define i32 @main() {\n  ret i32 3\n}",
		runtimeErr:       "@before = private constant [7 x i8] c\"before\\00\"\n\ndeclare i32 @puts(ptr)\ndeclare i32 @fflush(ptr)\ndeclare void @abort()\n\ndefine i32 @main() {\n  call i32 @puts(ptr @before)\n  call i32 @fflush(ptr null)\n  call void @abort()\n  unreachable\n}",
		runtimeErrSignal: "SIGABRT",
		syntaxErr:        "define i32 @main() {\n  ret i32\n}",
		syntaxErrWant:    "error: expected value token",
		loop:             "define i32 @main() {\nentry:\n  br label %loop\n\nloop:\n  br label %loop\n}",
		flood:            "@fmt = private constant [22 x i8] c\"line %06d xxxxxxxxxx\\0A\\00\"\n\ndeclare i32 @printf(ptr, ...)\n\ndefine i32 @main() {\nentry:\n  br label %loop\n\nloop:\n  %i = phi i32 [ 0, %entry ], [ %next, %loop ]\n  call i32 (ptr, ...) @printf(ptr @fmt, i32 %i)\n  %next = add i32 %i, 1\n  %more = icmp slt i32 %next, 20000\n  br i1 %more, label %loop, label %done\n\ndone:\n  ret i32 0\n}",
	},
	"forth": {
		hello:          ".( hello, world) cr",
		stdin:          "create line 80 allot\n\n: read-line-stdin ( -- u )\n  0 begin key dup 10 <> while over line + c! 1+ repeat drop ;\n\nread-line-stdin .( got: ) line swap type cr",
		exit3:          "3 throw",
		runtimeErr:     ".( before) cr\ndrop",
		runtimeErrWant: "INCLUDE error on line #2",
		syntaxErr:      ": broken ( -- ) undefined-word ;",
		syntaxErrWant:  "unrecognized word",
		loop:           ": spin ( -- ) begin again ;\nspin",
		flood:          ": pad6 ( n -- ) 0 <# # # # # # # #> type ;\n: flood ( -- ) 20000 0 do .\" line \" i pad6 .\"  xxxxxxxxxx\" cr loop ;\nflood",
	},
}

// unsupported lists the behaviours a language cannot have, with the reason;
// their subtests are skipped. Keep it minimal.
var unsupported = map[string]map[string]string{
	"sql": {"args": "sqlite3 takes no program arguments: words after the script would be run as SQL statements"},
	"forth": {
		"args":   "pForth has no words for the command line: a program cannot see its arguments",
		"stderr": "pForth writes everything, its error reports too, to standard output: the error subtests look for the message there",
	},
	"jq": {"stdin": "jq's standard input is JSON, read by the program with input and inputs: the test's plain text is not JSON (the corpus feeds it JSON)"},
	"brainfuck": {
		"args":          "brainfuck reads standard input only: it has no program arguments",
		"exit code":     "brainfuck has no way to set an exit code: beef exits 0 when the program ends",
		"runtime error": "brainfuck has no runtime errors: beef's tape wraps around and every cell value is valid",
	},
}

// errText is where a language's error messages are: standard error, or
// standard output too for a language that writes them there (unsupported
// "stderr").
func errText(lang string, r *engine.Result) string {
	if unsupported[lang]["stderr"] != "" {
		return r.Stdout + r.Stderr
	}
	return r.Stderr
}

func run(t *testing.T, e *engine.Engine, req engine.Request) *engine.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatalf("Run(%s): %v", req.Language, err)
	}
	return res
}

func TestLanguagesAgainstDocker(t *testing.T) {
	// Only the timeout subtest is about time limits, and it sets its own:
	// the rest must not fail because a loaded machine starts a JVM slowly.
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	e, b := testutil.Engine(t, &cfg)
	reg := languages.Builtin()
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	for _, lang := range reg.Names() {
		p, ok := perLanguage[lang]
		if !ok {
			t.Errorf("language %s has no test programs", lang)
			continue
		}
		t.Run(lang, func(t *testing.T) {
			t.Parallel()
			testutil.RequireImage(t, b, reg, lang)
			l, _ := reg.Lookup(lang)

			t.Run("hello", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.hello})
				if r.Status != engine.StatusOK || r.ExitCode != 0 || r.Stdout != "hello, world\n" {
					t.Fatalf("got %+v", r)
				}
				if r.RuntimeVersion == "" {
					t.Errorf("runtime_version is empty")
				}
				if l.Compiled() && (r.Compile == nil || r.Compile.ExitCode != 0) {
					t.Errorf("compile stage missing or failed: %+v", r.Compile)
				}
			})
			t.Run("stdin", func(t *testing.T) {
				if why := unsupported[lang]["stdin"]; why != "" {
					t.Skip(why)
				}
				r := run(t, e, engine.Request{Language: lang, Code: p.stdin, Stdin: "ping pong\nsecond\n"})
				if r.Stdout != "got: ping pong\n" {
					t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
				}
			})
			t.Run("args", func(t *testing.T) {
				if why := unsupported[lang]["args"]; why != "" {
					t.Skip(why)
				}
				r := run(t, e, engine.Request{Language: lang, Code: p.args, Args: []string{"one", "two words", "three"}})
				if r.Stdout != "one two words three\n" {
					t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
				}
			})
			t.Run("exit code", func(t *testing.T) {
				if why := unsupported[lang]["exit code"]; why != "" {
					t.Skip(why)
				}
				r := run(t, e, engine.Request{Language: lang, Code: p.exit3})
				if r.ExitCode != 3 || r.Status != engine.StatusError {
					t.Fatalf("got exit %d status %s", r.ExitCode, r.Status)
				}
			})
			t.Run("runtime error", func(t *testing.T) {
				if why := unsupported[lang]["runtime error"]; why != "" {
					t.Skip(why)
				}
				r := run(t, e, engine.Request{Language: lang, Code: p.runtimeErr})
				if p.runtimeErrSignal != "" {
					if r.Signal != p.runtimeErrSignal || r.Status != engine.StatusError || !strings.Contains(r.Stdout, "before") {
						t.Fatalf("want %s after printing before, got signal %q status %s stdout %q stderr %q", p.runtimeErrSignal, r.Signal, r.Status, r.Stdout, r.Stderr)
					}
					return
				}
				if r.ExitCode == 0 || !strings.Contains(errText(lang, r), p.runtimeErrWant) || !strings.Contains(r.Stdout, "before") {
					t.Fatalf("exit %d, stdout %q, stderr %q", r.ExitCode, r.Stdout, r.Stderr)
				}
			})
			t.Run("syntax error", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.syntaxErr})
				if l.Compiled() {
					if r.Status != engine.StatusCompileError || r.Compile == nil ||
						!strings.Contains(r.Compile.Stdout+r.Compile.Stderr, p.syntaxErrWant) {
						t.Fatalf("want a compile error with %q, got %+v", p.syntaxErrWant, r)
					}
					return
				}
				if r.ExitCode == 0 || !strings.Contains(errText(lang, r), p.syntaxErrWant) {
					t.Fatalf("exit %d, stderr %q", r.ExitCode, r.Stderr)
				}
			})
			if l.Compiled() {
				t.Run("compile error", func(t *testing.T) {
					r := run(t, e, engine.Request{Language: lang, Code: p.compileErr})
					if r.Status != engine.StatusCompileError || r.Compile == nil || r.Compile.ExitCode == 0 {
						t.Fatalf("want compile_error, got %+v", r)
					}
					if msg := r.Compile.Stdout + r.Compile.Stderr; !strings.Contains(msg, l.File) {
						t.Errorf("compiler message does not name the file: %q", msg)
					}
					if r.Stdout != "" || r.DurationMs != 0 {
						t.Errorf("the program ran after a failed compile: %+v", r.Stage)
					}
				})
			}
			t.Run("timeout", func(t *testing.T) {
				start := time.Now()
				r := run(t, e, engine.Request{Language: lang, Code: p.loop, TimeoutSeconds: 1})
				if !r.TimedOut || r.Status != engine.StatusTimeout || r.Signal != "SIGKILL" {
					t.Fatalf("got %+v", r)
				}
				// The compile stage has its own limit and, for a slow
				// compiler on a loaded machine, takes what it takes: only
				// the rest of the call must be about the 1 s run.
				elapsed := time.Since(start)
				if r.Compile != nil {
					elapsed -= time.Duration(r.Compile.DurationMs) * time.Millisecond
				}
				if r.DurationMs < 900 || elapsed > 30*time.Second {
					t.Errorf("run took %d ms (call %s, %s without the compile stage); want about 1 s", r.DurationMs, time.Since(start), elapsed)
				}
			})
			t.Run("output over the cap", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.flood})
				const want = 20000 * 23
				if r.Status != engine.StatusOK || !r.StdoutTruncated || r.StdoutBytes != want {
					t.Fatalf("status %s truncated %v bytes %d (want %d), stderr %q", r.Status, r.StdoutTruncated, r.StdoutBytes, want, r.Stderr)
				}
				if len(r.Stdout) > config.Default().Limits.InlineOutputBytes+200 {
					t.Errorf("inline stdout is %d bytes, over the cap", len(r.Stdout))
				}
				if !strings.HasPrefix(r.Stdout, "line 000000") || !strings.HasSuffix(r.Stdout, "line 019999 xxxxxxxxxx\n") {
					t.Errorf("inline stdout should keep head and tail")
				}
				full, ok := outputs.Runs(e.Config(), e.Store()).Get(r.StdoutURI, principal.LocalName)
				if !ok || len(full) != want {
					t.Fatalf("full output at %s: %d bytes, found %v", r.StdoutURI, len(full), ok)
				}
			})
		})
	}
}

func TestFilesAndEnv(t *testing.T) {
	e, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	blob := make([]byte, 4096)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	sum := sha256.Sum256(blob)
	code := `import hashlib, os
print(open('data/in.txt').read().strip())
print(hashlib.sha256(open('bin/blob.dat', 'rb').read()).hexdigest())
print(os.environ['GREETING'])
print(os.getcwd())`
	r := run(t, e, engine.Request{
		Language: "py", Code: code,
		Env: map[string]string{"GREETING": "hi there"},
		Files: []engine.InputFile{
			{Path: "data/in.txt", Content: "text file\n"},
			{Path: "bin/blob.dat", Content: base64.StdEncoding.EncodeToString(blob), Encoding: "base64"},
		},
	})
	want := "text file\n" + hex.EncodeToString(sum[:]) + "\nhi there\n/workspace\n"
	if r.Stdout != want {
		t.Fatalf("stdout %q, want %q; stderr %q", r.Stdout, want, r.Stderr)
	}
}

// TestHardening checks from inside a sandbox that the controls hold.
func TestHardening(t *testing.T) {
	e, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	code := `id -u
ls /sys/class/net | tr '\n' ' '; echo
grep -E '^(CapEff|CapBnd|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t' ' '
touch /etc/x 2>&1 | grep -o 'Read-only file system'
ulimit -n; ulimit -c; ulimit -f
ls /var/run/docker.sock 2>&1 | grep -o 'No such file'
cat /proc/1/comm
ls /proc/1/fd 2>&1 | grep -o 'Permission denied'
cat /proc/1/environ 2>&1 | grep -o 'Permission denied'`
	r := run(t, e, engine.Request{Language: "bash", Code: code})
	lines := strings.Split(strings.TrimSpace(r.Stdout), "\n")
	want := []string{
		"10001",
		"lo ",
		"CapEff: 0000000000000000",
		"CapBnd: 0000000000000000",
		"NoNewPrivs: 1",
		"Seccomp: 2",
		"Read-only file system",
		"1024", "0", "32768", // fsize in 1 KiB blocks: 32 MiB
		"No such file",
		"agent",             // the agent is PID 1, no separate init
		"Permission denied", // and not dumpable: its descriptors,
		"Permission denied", // environment and memory are out of reach
	}
	if len(lines) != len(want) {
		t.Fatalf("got %d lines, want %d:\n%s\nstderr: %s", len(lines), len(want), r.Stdout, r.Stderr)
	}
	for i := range want {
		if lines[i] != want[i] {
			t.Errorf("line %d: got %q, want %q", i, lines[i], want[i])
		}
	}
}

func TestCancelKillsSandbox(t *testing.T) {
	e, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The cancel comes once the program has printed, not after a fixed
	// time: under load the sandbox may take longer than any timer to start.
	var once sync.Once
	var cancelled atomic.Int64
	onChunk := func(c sandbox.Chunk) {
		if strings.Contains(string(c.Data), "started") {
			once.Do(func() { cancelled.Store(time.Now().UnixNano()); cancel() })
		}
	}
	r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo started; sleep 60"}, engine.RunOptions{OnChunk: onChunk})
	if err != nil {
		t.Fatal(err)
	}
	if at := cancelled.Load(); at == 0 {
		t.Fatal("the program's output never arrived, so the run was never cancelled")
	} else if took := time.Since(time.Unix(0, at)); took > 30*time.Second {
		t.Errorf("cancel took %s to end the run (the program sleeps 60 s)", took)
	}
	if r.Status != engine.StatusKilled || r.Stdout != "started\n" {
		t.Errorf("got status %s stdout %q; want killed with partial output", r.Status, r.Stdout)
	}
	testutil.NoLeftovers(t, b.Client())
}

// TestColdSandboxRemovedAfterTheAnswer runs cold runs back to back with one
// run slot: each answers before its sandbox is removed, but the next one
// waits for that removal (never two sandboxes at once), and Close waits for
// the last.
func TestColdSandboxRemovedAfterTheAnswer(t *testing.T) {
	cfg := config.Default()
	cfg.MaxConcurrentRuns = 1
	e, b := testutil.Engine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	cli := b.Client()
	count := func() int {
		list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()))})
		if err != nil {
			t.Error(err)
			return 0
		}
		return len(list.Items)
	}
	most := 0
	stop := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stop:
				return
			default:
			}
			most = max(most, count())
		}
	}()
	for i := range 5 {
		if r := run(t, e, engine.Request{Language: "bash", Code: "echo hi"}); r.Status != engine.StatusOK {
			t.Fatalf("run %d: %+v", i, r)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(ctx); err != nil {
		t.Fatal(err)
	}
	close(stop)
	<-watched
	if n := count(); n != 0 {
		t.Errorf("%d sandbox(es) still there after Close", n)
	}
	if most > 1 {
		t.Errorf("saw %d sandboxes at once with one run slot", most)
	}
}

func TestBackgroundProcessesDoNotOutliveRun(t *testing.T) {
	e, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	// The run returns as soon as its main process ends, not after the
	// detached sleepers (which would hold the pipes open).
	start := time.Now()
	r := run(t, e, engine.Request{Language: "bash", Code: "setsid sleep 100 & nohup sleep 100 >/dev/null 2>&1 & (sleep 100 &) ; echo done"})
	if r.Status != engine.StatusOK || r.Stdout != "done\n" {
		t.Fatalf("got %+v", r)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("run took %s: background processes kept it alive", took)
	}
}

func TestBadInputAgainstDocker(t *testing.T) {
	// A missing image and an unreachable daemon: clear errors, nothing left.
	e, b := testutil.Engine(t, nil)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	reg, err := languages.Parse([]byte(`{"images":[{"name":"ghost","tag":"mcp-code-runner/ghost:0","from":"root"}],
		"languages":[{"name":"ghostlang","image":"ghost","file":"main.g","run":["g"],"version":["g"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	ghost := engine.New(config.Default(), reg, b, nil)
	_, err = ghost.Run(context.Background(), engine.Request{Language: "ghostlang", Code: "x"}, engine.RunOptions{})
	if engine.CodeOf(err) != engine.CodeImageMissing || !strings.Contains(err.Error(), "images build ghostlang") {
		t.Errorf("missing image: got %v", err)
	}
	_ = e
}
