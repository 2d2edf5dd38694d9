package engine_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// programs holds, per language, one program for each behaviour every
// language must get right.
type programs struct {
	hello, stdin, args, exit3, runtimeErr, syntaxErr, loop, flood string
	runtimeErrWant, syntaxErrWant                                 string
	compileErr                                                    string // compiled languages only
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
		compileErr:     "const n: number = 'not a number';\nconsole.log(n);",
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
	e, b := testutil.Engine(t, nil)
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
				r := run(t, e, engine.Request{Language: lang, Code: p.stdin, Stdin: "ping pong\nsecond\n"})
				if r.Stdout != "got: ping pong\n" {
					t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
				}
			})
			t.Run("args", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.args, Args: []string{"one", "two words", "three"}})
				if r.Stdout != "one two words three\n" {
					t.Fatalf("stdout %q, stderr %q", r.Stdout, r.Stderr)
				}
			})
			t.Run("exit code", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.exit3})
				if r.ExitCode != 3 || r.Status != engine.StatusError {
					t.Fatalf("got exit %d status %s", r.ExitCode, r.Status)
				}
			})
			t.Run("runtime error", func(t *testing.T) {
				r := run(t, e, engine.Request{Language: lang, Code: p.runtimeErr})
				if r.ExitCode == 0 || !strings.Contains(r.Stderr, p.runtimeErrWant) || !strings.Contains(r.Stdout, "before") {
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
				if r.ExitCode == 0 || !strings.Contains(r.Stderr, p.syntaxErrWant) {
					t.Fatalf("exit %d, stderr %q", r.ExitCode, r.Stderr)
				}
			})
			if l.Compiled() {
				t.Run("compile error", func(t *testing.T) {
					r := run(t, e, engine.Request{Language: lang, Code: p.compileErr})
					if r.Status != engine.StatusCompileError || r.Compile == nil || r.Compile.ExitCode == 0 {
						t.Fatalf("want compile_error, got %+v", r)
					}
					if msg := r.Compile.Stdout + r.Compile.Stderr; !strings.Contains(msg, "main.") {
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
				if r.DurationMs < 900 || time.Since(start) > 30*time.Second {
					t.Errorf("run took %d ms (call %s); want about 1 s", r.DurationMs, time.Since(start))
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
				full, ok := e.Outputs().Get(r.StdoutURI)
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
	time.AfterFunc(1500*time.Millisecond, cancel)
	start := time.Now()
	r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo started; sleep 60"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("cancel took %s to end the run", took)
	}
	if r.Status != engine.StatusKilled || r.Stdout != "started\n" {
		t.Errorf("got status %s stdout %q; want killed with partial output", r.Status, r.Stdout)
	}
	testutil.NoLeftovers(t, b.Client())
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
