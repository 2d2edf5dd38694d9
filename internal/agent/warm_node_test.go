package agent

import (
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// nodeWarm is the JavaScript language's warm interpreter, as the engine
// describes it to the agent.
var nodeWarm = wire.Warm{Name: "node_warm.cjs", Argv: []string{"node", "--require", "{program_file}", "main.js"}, Replaces: []string{"node", "main.js"}}

// TestWarmNodeRunsTheScriptAsNode runs each program with the node this
// host has, twice: handed to a warm node (started with the preload before
// the files exist) and as a plain `node main.js`, in directories of the same
// name; what the two print and their exit codes must be the same. (The
// pool's test compares them in the sandbox image.)
func TestWarmNodeRunsTheScriptAsNode(t *testing.T) {
	requireHostCommand(t, "node")
	const probe = `console.log(JSON.stringify({argv: process.argv.slice(1), execArgv: process.execArgv, file: __filename,
  main: require.main === module, cache: Object.keys(require.cache), cwd: process.cwd(), children: module.children.length}));
console.log(require('fs').readdirSync(require('os').tmpdir()).filter((n) => n.startsWith('.mcr-warm-')));
function f() { throw new Error('boom'); }
f();`
	cases := []struct {
		name  string
		files []wire.File
		args  []string
		env   []string
	}{
		{"CommonJS, arguments and a stack trace", []wire.File{{Path: "main.js", Data: []byte(probe)}}, []string{"a b", "c"}, nil},
		{"ESM by package.json", []wire.File{{Path: "main.js", Data: []byte("console.log(import.meta.url, typeof require);\nthrow new TypeError('esm');")},
			{Path: "package.json", Data: []byte(`{"type": "module"}`)}}, nil, nil},
		{"unhandled rejection", []wire.File{{Path: "main.js", Data: []byte("Promise.reject(new RangeError('nope'));")}}, nil, nil},
		{"a program that writes nothing ends", []wire.File{{Path: "main.js", Data: []byte("setTimeout(() => {}, 10);")}}, nil, nil},
		{"stdout written through its descriptor", []wire.File{{Path: "main.js", Data: []byte("require('fs').writeSync(1, 'raw\\n');\nconsole.log(process.stdout.isTTY, process.stdout.constructor.name, process.stderr.constructor.name);")}}, nil, nil},
		{"other environment", []wire.File{{Path: "main.js", Data: []byte(probe)}}, nil, []string{"MINE=1"}},
		{"exit listeners run in order, once and all, and set the exit code", js(`process.on('exit', (c) => console.log('first', c));
process.once('exit', (c) => { console.log('once', c, process.listenerCount('exit')); process.exitCode = 4; });
process.on('exit', (c) => console.log('last', c, process.exitCode));
process.exitCode = 2;`), nil, nil},
		{"an exit listener that throws", js("process.on('exit', () => { throw new Error('in exit'); });\nprocess.on('exit', () => console.log('never'));\nconsole.log('x');"), nil, nil},
		{"a lone exit listener that throws", js("process.on('exit', () => { throw new Error('alone'); });"), nil, nil},
		{"process.exit with a code from a timer", js("process.on('exit', (c) => console.log('exit', c));\nsetTimeout(() => process.exit(5), 1);"), nil, nil},
		{"process.exit inside an exit listener", js("process.on('exit', (c) => { console.log('a', c); process.exit(6); });\nprocess.on('exit', () => console.log('b'));"), nil, nil},
		{"beforeExit that schedules more work", js("let n = 0;\nprocess.on('beforeExit', () => { if (n++ < 2) setTimeout(() => console.log('again', n), 1); });\nprocess.on('exit', (c) => console.log('exit', c, n));"), nil, nil},
		{"an uncaught exception after an exit listener prints its stack trace", js("process.on('exit', (c) => console.log('exit', c));\nsetTimeout(() => { throw new Error('late'); }, 1);"), nil, nil},
		{"a handled exception, then the loop runs dry", js("process.on('uncaughtException', (e) => console.log('caught', e.message));\nprocess.on('exit', (c) => console.log('exit', c));\nsetTimeout(() => { throw new Error('x'); }, 1);"), nil, nil},
		{"a rejection with an exit listener", js("process.on('exit', (c) => console.log('exit', c));\nPromise.reject(new Error('rejected'));"), nil, nil},
		{"top-level await that never settles", []wire.File{{Path: "main.js", Data: []byte("process.on('exit', (c) => console.log('exit', c));\nawait new Promise(() => {});")},
			{Path: "package.json", Data: []byte(`{"type": "module"}`)}}, nil, nil},
		{"a megabyte written just before the end is all there", js("process.stdout.write('x'.repeat(1 << 20) + '\\n');\nprocess.stderr.write('y'.repeat(1 << 16));"), nil, nil},
		{"a manual emit of 'exit' is not an exit", js("process.emit('exit', 0);\nconsole.log('still here');\nprocess.exitCode = 3;"), nil, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			base := t.TempDir()
			var got [2]string
			for i, warmed := range []bool{true, false} {
				dir, w := sameDirWithWarm(t, base, nodeWarm, warmed)
				stages, stdout, stderr, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 1 << 16, Files: c.files,
					Stages: []wire.Stage{{Name: "run", Argv: append([]string{"node", "main.js"}, c.args...), Env: c.env, TimeoutMs: 20000}}})
				if done.Error != "" || len(stages) != 1 {
					t.Fatalf("done %+v, stages %+v", done, stages)
				}
				got[i] = strings.Join([]string{stdout[0], stderr[0], string(rune('0' + stages[0].ExitCode))}, "\n--\n")
				if warm != nil {
					t.Error("the warm interpreter is still waiting after the stage")
				}
				if fits := c.env == nil; w != nil && fits != w.handed {
					t.Errorf("the stage was handed to the warm node: %v, want %v", w.handed, fits)
				}
				_ = os.RemoveAll(dir)
			}
			if got[0] != got[1] {
				t.Errorf("warm node:\n%s\n\nnode main.js:\n%s", got[0], got[1])
			}
		})
	}
}

// sameDirWithWarm makes base/main afresh and the working directory, and, if
// warmed, starts spec's warm interpreter in it, which it returns (nil
// otherwise). The same path every time, so that a program's output may
// name it; a path of the test's own, so that two runs of the suite on one
// machine do not write each other's programs.
func sameDirWithWarm(t *testing.T, base string, spec wire.Warm, warmed bool) (string, *warmProc) {
	t.Helper()
	dir := filepath.Join(base, "main")
	_ = os.RemoveAll(dir)
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	if !warmed {
		return dir, nil
	}
	data, _ := json.Marshal(spec)
	if err := StartWarm(string(data)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { warm = nil })
	return dir, warm
}

// js is a workspace of one main.js holding source.
func js(source string) []wire.File {
	return []wire.File{{Path: "main.js", Data: []byte(source)}}
}

// TestAWarmNodeReportsANaturalEndBeforeItsTeardown runs programs in a warm
// node and checks which ended on the node's exit report (the stage's answer
// not waiting for Node's teardown) and which were waited for, and that the
// exit code, output and usage are right either way.
func TestAWarmNodeReportsANaturalEndBeforeItsTeardown(t *testing.T) {
	requireHostCommand(t, "node")
	for _, c := range []struct {
		name     string
		source   string
		reported bool
		exitCode int
		stdout   string
	}{
		{"the event loop runs dry", "console.log('hi')", true, 0, "hi\n"},
		{"process.exitCode set, then the loop runs dry", "process.exitCode = 3; console.log('hi')", true, 3, "hi\n"},
		{"an exit code past 255 wraps as exit(3) does", "process.exitCode = 258", true, 2, ""},
		{"process.exit is waited for", "console.log('hi'); process.exit(4)", false, 4, "hi\n"},
		{"an uncaught exception is waited for", "console.log('hi'); throw new Error('x')", false, 1, "hi\n"},
		{"a program that closed fd 3 is waited for", "require('fs').closeSync(3); console.log('hi')", false, 0, "hi\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			t.Chdir(dir)
			spec, _ := json.Marshal(nodeWarm)
			if err := StartWarm(string(spec)); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { warm = nil })
			readsBefore, reportsBefore := exitReportReadsEnded.Load(), exitReportsRead.Load()
			stages, stdout, _, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 1 << 16, Files: js(c.source),
				Stages: []wire.Stage{{Name: "run", Argv: []string{"node", "main.js"}, TimeoutMs: 20000}}})
			if done.Error != "" || len(stages) != 1 {
				t.Fatalf("done %+v, stages %+v", done, stages)
			}
			st := stages[0]
			// The stage may have ended on the process's exit before the
			// report was read (a busy machine): what node sent is known
			// once the read of its report has ended.
			for deadline := time.Now().Add(10 * time.Second); exitReportReadsEnded.Load() == readsBefore; {
				if time.Now().After(deadline) {
					t.Fatal("the read of the exit report did not end")
				}
				time.Sleep(time.Millisecond) // polling the condition, with a deadline
			}
			if reported := exitReportsRead.Load() > reportsBefore; reported != c.reported {
				t.Errorf("node reported the exit: %v, want %v", reported, c.reported)
			}
			if st.ExitCode != c.exitCode || st.Signal != "" || stdout[0] != c.stdout {
				t.Errorf("exit %d signal %q stdout %q; want exit %d, stdout %q", st.ExitCode, st.Signal, stdout[0], c.exitCode, c.stdout)
			}
			// The peak holds even when node had released its memory by the
			// time the agent read /proc: the report carries node's own. Its
			// CPU time is /proc's, counted in clock ticks (10 ms): a node
			// that no tick caught running reads 0, so only a negative one
			// is wrong.
			if st.MaxRSSKB < 1024 || st.CPUTimeMs < 0 {
				t.Errorf("usage: %d KiB, %d ms of CPU; node uses more", st.MaxRSSKB, st.CPUTimeMs)
			}
		})
	}
}

// TestTheAgentSaysItIsReadyOnceItsWarmNodeHasLoaded starts a warm node,
// asks Serve whether it is ready and reads its answer: Ready, and only once
// the node has loaded its preload (it signalled on fd 3) and waits for its
// job.
func TestTheAgentSaysItIsReadyOnceItsWarmNodeHasLoaded(t *testing.T) {
	requireHostCommand(t, "node")
	t.Chdir(t.TempDir())
	spec, _ := json.Marshal(nodeWarm)
	if err := StartWarm(string(spec)); err != nil {
		t.Fatal(err)
	}
	w := warm
	t.Cleanup(func() {
		if warm != nil {
			warm.stop()
			warm = nil
		}
	})
	in, toAgent := io.Pipe()
	fromAgent, out := io.Pipe()
	served := make(chan error, 1)
	go func() { served <- Serve(in, out); out.Close() }()
	go func() { _ = wire.WriteFrame(toAgent, wire.Frame{Kind: wire.KindReady}) }()
	f, err := wire.ReadFrame(fromAgent)
	if err != nil || f.Kind != wire.KindReady {
		t.Fatalf("first frame: kind %q, %v; want Ready", f.Kind, err)
	}
	select {
	case <-w.ready:
	default:
		t.Error("the agent said it was ready before its warm node had loaded")
	}
	if w.cmd.ProcessState != nil {
		t.Error("the warm node had ended")
	}
	toAgent.Close()
	go func() { _, _ = io.Copy(io.Discard, fromAgent) }()
	if err := <-served; err == nil || !strings.Contains(err.Error(), "no request") {
		t.Errorf("Serve with no request: %v", err)
	}
}
