package agent

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
)

// nodeWarm is the JavaScript language's warm interpreter, as the engine
// describes it to the agent.
var nodeWarm = wire.Warm{Name: "node", Argv: []string{"node", "--require", "{program_file}", "main.js"}, Replaces: []string{"node", "main.js"}}

// TestWarmNodeRunsTheScriptAsNode runs each program with the node this
// host has, twice: handed to a warm node (started with the preload before
// the files exist) and as a plain `node main.js`, in directories of the same
// name; what the two print and their exit codes must be the same. (The
// pool's test compares them in the sandbox image.)
func TestWarmNodeRunsTheScriptAsNode(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got [2]string
			for i, warmed := range []bool{true, false} {
				// The same path both times, so that the output may name it.
				dir := filepath.Join(os.TempDir(), "mcr-warm-node-test")
				_ = os.RemoveAll(dir)
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
				t.Chdir(dir)
				var w *warmProc
				if warmed {
					spec, _ := json.Marshal(nodeWarm)
					if err := StartWarm(string(spec)); err != nil {
						t.Fatal(err)
					}
					w = warm
					t.Cleanup(func() { warm = nil })
				}
				stages, stdout, stderr, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 1 << 16, Files: c.files,
					Stages: []wire.Stage{{Name: "run", Argv: append([]string{"node", "main.js"}, c.args...), Env: c.env, TimeoutMs: 20000}}})
				if done.Error != "" || len(stages) != 1 {
					t.Fatalf("done %+v, stages %+v", done, stages)
				}
				got[i] = strings.Join([]string{stdout[0], stderr[0], string(rune('0' + stages[0].ExitCode))}, "\n--\n")
				if warm != nil {
					t.Error("the warm interpreter is still waiting after the stage")
				}
				// A warm node that ran the stage was waited for and exited;
				// one that did not fit was killed.
				if fits := c.env == nil; w != nil && fits && (w.cmd.ProcessState == nil || !w.cmd.ProcessState.Exited()) {
					t.Error("the stage did not run in the warm node")
				}
				_ = os.RemoveAll(dir)
			}
			if got[0] != got[1] {
				t.Errorf("warm node:\n%s\n\nnode main.js:\n%s", got[0], got[1])
			}
		})
	}
}
