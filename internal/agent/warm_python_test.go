package agent

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// pythonWarm is the Python language's warm interpreter, as the engine
// describes it to the agent.
var pythonWarm = wire.Warm{Name: "python_warm.py", Argv: []string{"python3", "-u", "-c", "{program}"}, Replaces: []string{"python3", "-u", "main.py"}}

// pythonEndings are programs that end every way a Python program can, each
// leaving what the interpreter's exit shows: output of atexit callbacks,
// threads and __del__ methods, files it did not close, exit codes.
var pythonEndings = []struct {
	name  string
	files []wire.File
	// reported: the warm interpreter reports the end on fd 3 (the agent
	// answers without waiting for the teardown).
	reported bool
}{
	{"it returns", py("print('hi')"), true},
	{"sys.exit with a code", py("import sys\nprint('a')\nsys.exit(3)"), true},
	{"sys.exit past 255 wraps", py("raise SystemExit(258)"), true},
	{"a negative code", py("import sys; sys.exit(-1)"), true},
	{"sys.exit(None) and True", py("import sys\nsys.exit(True if len(sys.argv) > 5 else None)"), true},
	{"sys.exit with a message", py("import sys; sys.exit('bad input')"), false},
	{"an integer too large for the exit", py("raise SystemExit(1 << 40)"), false},
	{"an uncaught exception", py("def f():\n    raise ValueError('boom')\nf()"), true},
	{"a syntax error", py("print('x'\n"), true},
	{"a KeyboardInterrupt", py("print('x')\nraise KeyboardInterrupt"), false},
	{"atexit callbacks run last to first and see the exception", py(`import atexit, sys
atexit.register(lambda: print('first registered', type(getattr(sys, 'last_value', None)).__name__))
atexit.register(lambda: print('second registered'))
raise KeyError('k')`), true},
	{"an atexit callback that raises", py("import atexit\natexit.register(lambda: 1 / 0)\nprint('x')"), true},
	{"a thread that is not a daemon finishes", py(`import threading, time
def work():
    time.sleep(0.05)
    print('thread done')
threading.Thread(target=work).start()
print('main done')`), true},
	{"__del__ of globals, with the namespace cleared", py(`class Noisy:
    def __init__(self, name): self.name = name
    def __del__(self): print('del', self.name, type(Noisy).__name__)
a = Noisy('a')
_b = Noisy('_b')
print('end')`), true},
	{"__del__ of a cycle", py(`class Node:
    def __del__(self): print('collected')
n = Node(); n.me = n
del n
import gc; gc.disable()
print('end')`), true},
	{"a file written and never closed", py(`f = open('out.txt', 'w')
f.write('x' * 10000)
print('written')`), true},
	{"a module of the workspace with a __del__", []wire.File{
		{Path: "main.py", Data: []byte("import helper\nprint('main')")},
		{Path: "helper.py", Data: []byte("class H:\n    def __del__(self): print('helper del')\nh = H()\nlog = open('helper.txt', 'w')\nlog.write('kept')")},
	}, true},
	{"stdout closed by the program", py("import sys\nprint('x')\nsys.stdout.close()"), true},
	{"stdout replaced by an object without closed", py("import sys\nclass Upper:\n    def write(self, s): sys.__stdout__.write(s.upper())\n    def flush(self): pass\nsys.stdout = Upper()\nprint('x')"), true},
	{"the program closes fd 3", py(closesFD3 + "print('x')"), false},
	{"the program closes fd 3 and a file takes it", py(closesFD3 + "f = open('three.txt', 'w')\nprint(f.fileno())\nf.write('mine')"), false},
	{"os._exit", py("import os\nprint('x')\nos._exit(7)"), false},
	{"weakref.finalize", py("import weakref\nclass C: pass\nc = C()\nweakref.finalize(c, print, 'finalized')\nprint('end')"), true},
	{"stdin read to its end", py("import sys\nprint(repr(sys.stdin.read()))"), true},
	{"a megabyte written just before the end is all there", py("import sys\nsys.stdout.write('x' * (1 << 20) + '\\n')\nsys.stderr.write('y' * (1 << 16))"), true},
}

// closesFD3 closes fd 3, which only the warm interpreter has open.
const closesFD3 = "import os\ntry:\n    os.close(3)\nexcept OSError:\n    pass\n"

// addresses are the objects' addresses Python prints, which differ from
// run to run.
var addresses = regexp.MustCompile(`0x[0-9a-f]+`)

// TestWarmPythonEndsAsPython3Would runs each program with this host's
// python3 twice: handed to the warm interpreter and as a plain
// `python3 -u main.py`, in directories of the same name; what the two
// print, their exit codes and the files they leave must be the same.
func TestWarmPythonEndsAsPython3Would(t *testing.T) {
	requireHostCommand(t, "python3")
	for _, c := range pythonEndings {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			var got [2]string
			for i, warmed := range []bool{true, false} {
				dir, w := sameDirWithWarm(t, base, pythonWarm, warmed)
				stages, stdout, stderr, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 1 << 21, Files: c.files,
					Stages: []wire.Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py"}, Stdin: []byte("in\n"), TimeoutMs: 20000}}})
				if done.Error != "" || len(stages) != 1 {
					t.Fatalf("done %+v, stages %+v", done, stages)
				}
				if warmed && !w.handed {
					t.Fatal("the stage was not handed to the warm interpreter")
				}
				got[i] = strings.Join([]string{stdout[0], addresses.ReplaceAllString(stderr[0], "0x…"), "exit " + strconv.Itoa(stages[0].ExitCode) + " " + stages[0].Signal, workspaceFiles(t, dir)}, "\n--\n")
				_ = os.RemoveAll(dir)
			}
			if got[0] != got[1] {
				t.Errorf("warm python:\n%s\n\npython3 -u main.py:\n%s", got[0], got[1])
			}
		})
	}
}

// TestWarmPythonReportsItsEndBeforeItsTeardown checks which programs ended
// on the warm interpreter's report and which were waited for.
func TestWarmPythonReportsItsEndBeforeItsTeardown(t *testing.T) {
	requireHostCommand(t, "python3")
	for _, c := range pythonEndings {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			spec, _ := json.Marshal(pythonWarm)
			if err := StartWarm(string(spec)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { warm = nil })
			readsBefore, reportsBefore := exitReportReadsEnded.Load(), exitReportsRead.Load()
			stages, _, _, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 1 << 21, Files: c.files,
				Stages: []wire.Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py"}, TimeoutMs: 20000}}})
			if done.Error != "" || len(stages) != 1 {
				t.Fatalf("done %+v, stages %+v", done, stages)
			}
			// As for node: what the interpreter sent is known once the read
			// of its report has ended.
			for deadline := time.Now().Add(10 * time.Second); exitReportReadsEnded.Load() == readsBefore; {
				if time.Now().After(deadline) {
					t.Fatal("the read of the exit report did not end")
				}
				time.Sleep(time.Millisecond) // polling the condition, with a deadline
			}
			if reported := exitReportsRead.Load() > reportsBefore; reported != c.reported {
				t.Errorf("python reported its end: %v, want %v", reported, c.reported)
			}
			if st := stages[0]; st.MaxRSSKB < 1024 || st.CPUTimeMs < 0 {
				t.Errorf("usage: %d KiB, %d ms of CPU; python uses more", st.MaxRSSKB, st.CPUTimeMs)
			}
		})
	}
}

// py is a workspace of one main.py holding source.
func py(source string) []wire.File {
	return []wire.File{{Path: "main.py", Data: []byte(source)}}
}

// workspaceFiles lists the files a program left in dir, with their
// contents, but main.py.
func workspaceFiles(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range entries {
		if e.IsDir() || e.Name() == "main.py" || e.Name() == "helper.py" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(e.Name() + ": " + string(data) + "\n")
	}
	return b.String()
}
