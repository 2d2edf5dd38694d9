//go:build !fast

package pool_test

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
)

// TestWarmPythonEndsAsPython3 runs each program twice in the python image:
// in a warm sandbox, whose interpreter reports the program's end before its
// own teardown (internal/wire/programs/python_warm.py), and in a cold one,
// whose run stage is a plain `python3 -u main.py`. The results must be the
// same: output, exit code, signal, status and the files the program left
// (the artifacts, by size and hash), every way a program can end.
func TestWarmPythonEndsAsPython3(t *testing.T) {
	cold := coldEngine(t)
	warm := pooledEngineFor(t, "python", 1)
	for _, c := range []struct {
		name  string
		code  string
		files []engine.InputFile
	}{
		{"it returns", "print('hi')", nil},
		{"sys.exit with a code", "import sys\nprint('a')\nsys.exit(3)", nil},
		{"sys.exit past 255 wraps", "raise SystemExit(258)", nil},
		{"sys.exit with a message", "import sys; sys.exit('bad input')", nil},
		{"an uncaught exception", "def f():\n    raise ValueError('boom')\nf()", nil},
		{"a syntax error", "print('x'\n", nil},
		{"a KeyboardInterrupt", "print('x')\nraise KeyboardInterrupt", nil},
		{"atexit callbacks and the exception they see", "import atexit, sys\natexit.register(lambda: print('first', type(getattr(sys, 'last_value', None)).__name__))\natexit.register(lambda: print('second'))\nraise KeyError('k')", nil},
		{"a thread that is not a daemon finishes", "import threading, time\ndef work():\n    time.sleep(0.05)\n    print('thread done')\nthreading.Thread(target=work).start()\nprint('main done')", nil},
		{"__del__ of globals", "class Noisy:\n    def __init__(self, name): self.name = name\n    def __del__(self): print('del', self.name, type(Noisy).__name__)\na = Noisy('a')\n_b = Noisy('_b')\nprint('end')", nil},
		{"a file written and never closed", "f = open('out.txt', 'w')\nf.write('x' * 10000)\nprint('written')", nil},
		{"a module of the workspace with a __del__ and an open file", "import helper\nprint('main')",
			[]engine.InputFile{{Path: "helper.py", Content: "class H:\n    def __del__(self): print('helper del')\nh = H()\nlog = open('helper.txt', 'w')\nlog.write('kept')"}}},
		{"weakref.finalize", "import weakref\nclass C: pass\nc = C()\nweakref.finalize(c, print, 'finalized')\nprint('end')", nil},
		{"os._exit", "import os\nprint('x')\nos._exit(7)", nil},
		{"output written just before the end", "import sys\nsys.stdout.write('x' * 200000 + '\\n')\nsys.stderr.write('e' * 50000)", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, k := runWarmAndCold(t, warm, cold, engine.Request{Language: "python", Code: c.code, Files: c.files})
			if got, want := pythonEnding(w), pythonEnding(k); got != want {
				t.Errorf("warm:\n%s\ncold (python3 -u main.py):\n%s", got, want)
			}
		})
	}
}

// objectAddresses are the addresses Python prints, which differ from run to
// run.
var objectAddresses = regexp.MustCompile(`0x[0-9a-f]+`)

// pythonEnding is what a run showed of its end, for comparison.
func pythonEnding(r *engine.Result) string {
	s := fmt.Sprintf("%s exit %d signal %q\nstdout %q\nstderr %q\n", r.Status, r.ExitCode, r.Signal, r.Stdout, objectAddresses.ReplaceAllString(r.Stderr, "0x…"))
	for _, a := range r.Artifacts {
		s += fmt.Sprintf("file %s %d %s\n", a.Path, a.Size, a.SHA256)
	}
	return s
}
