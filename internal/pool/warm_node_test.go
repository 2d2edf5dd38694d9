//go:build !fast

package pool_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// coldEngine returns an engine with no warm pool: every run gets a sandbox
// created for it, whose run stage starts the language's run command.
func coldEngine(t *testing.T) *engine.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.Pool.Size = 0
	e, b := testutil.Engine(t, &cfg)
	closeAtEnd(t, e, b.Client())
	return e
}

// TestWarmNodeBehavesAsNode runs each program twice in the same image: in a
// warm JavaScript sandbox, whose agent started node before the job, and in a
// cold one, whose run stage is a plain `node main.js`; the two results must
// be the same, output, exit code and status. Both Node.js releases are
// checked: Debian's 20 (javascript) and the LTS from npm (javascript-lts).
func TestWarmNodeBehavesAsNode(t *testing.T) {
	// The cold engine first: its check for containers left behind runs
	// last, after the warm pools' are removed.
	cold := coldEngine(t)
	for _, js := range []struct{ lang, node string }{{"javascript", "node"}, {"javascript-lts", "node24"}} {
		t.Run(js.lang, func(t *testing.T) { testWarmNode(t, cold, js.lang, js.node) })
	}
}

func testWarmNode(t *testing.T, cold *engine.Engine, lang, node string) {
	warm := pooledEngineFor(t, lang, 1)
	const probe = `console.log(JSON.stringify({argv: process.argv, execArgv: process.execArgv, file: __filename, dir: __dirname,
  main: require.main === module, cache: Object.keys(require.cache), cwd: process.cwd(), env: process.env.MINE,
  tmp: require('fs').readdirSync('/tmp'), ws: require('fs').readdirSync('.'), paths: module.paths}));`
	esmProbe := `import { readdirSync } from 'node:fs';
import { x } from './lib.js';
console.log(import.meta.url, import.meta.filename, x, typeof require, typeof module, readdirSync('/tmp'), process.argv);
await Promise.resolve();
console.log('after await');
`
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"argv, __filename, require.main, execArgv and the module cache", engine.Request{Code: probe, Args: []string{"a b", "c"}}},
		{"its own environment", engine.Request{Code: probe, Env: map[string]string{"MINE": "1"}}},
		{"require of a local module", engine.Request{Code: "const lib = require('./lib');\nconsole.log(lib.x, require.resolve('./lib'), module.children.length);",
			Files: []engine.InputFile{{Path: "lib.js", Content: "exports.x = 42;"}}}},
		{"ESM by package.json", engine.Request{Code: esmProbe, Args: []string{"z"}, Files: []engine.InputFile{
			{Path: "package.json", Content: `{"type": "module"}`}, {Path: "lib.js", Content: "export const x = 7;"}}}},
		{"ESM by its syntax alone", engine.Request{Code: "import os from 'node:os';\nconsole.log(typeof os.cpus, import.meta.url);"}},
		{"uncaught exception and its stack trace", engine.Request{Code: "function f() {\n  throw new Error('boom');\n}\nconsole.log('before');\nf();"}},
		{"stack trace in ESM", engine.Request{Code: "throw new TypeError('esm boom');",
			Files: []engine.InputFile{{Path: "package.json", Content: `{"type": "module"}`}}}},
		{"syntax error", engine.Request{Code: "console.log('x'\n"}},
		{"exit code", engine.Request{Code: "console.log('out');\nprocess.exit(3);"}},
		{"exitCode after asynchronous work", engine.Request{Code: "setTimeout(() => { console.log('later'); process.exitCode = 4; }, 10);\nprocess.on('exit', (c) => console.log('exit', c));"}},
		{"unhandled rejection", engine.Request{Code: "Promise.reject(new RangeError('nope'));\nsetTimeout(() => console.log('never'), 1000);"}},
		{"stdin", engine.Request{Code: "let s = '';\nprocess.stdin.on('data', (d) => s += d).on('end', () => console.log(JSON.stringify(s)));", Stdin: "line 1\nline 2\n"}},
		{"empty stdin", engine.Request{Code: "console.log(JSON.stringify(require('fs').readFileSync(0, 'utf8')));"}},
		{"a program that writes nothing", engine.Request{Code: "setTimeout(() => {}, 10);"}},
		{"exit listeners in order, and the exit code they leave", engine.Request{Code: "process.on('exit', (c) => console.log('first', c, process.listenerCount('exit')));\nprocess.once('exit', (c) => { process.exitCode = 5; });\nprocess.on('exit', (c) => console.log('last', c, process.exitCode));\nprocess.exitCode = 2;"}},
		{"an exit listener that throws", engine.Request{Code: "process.on('exit', () => { throw new Error('in exit'); });\nconsole.log('x');"}},
		{"a top-level await that never settles", engine.Request{Code: "process.on('exit', (c) => console.log('exit', c));\nawait new Promise(() => {});",
			Files: []engine.InputFile{{Path: "package.json", Content: `{"type": "module"}`}}}},
		{"output written just before the end", engine.Request{Code: "process.stdout.write('x'.repeat(200000) + '\\n');\nconsole.error('e'.repeat(50000));"}},
		{"stdout and stderr streams", engine.Request{Code: "require('fs').writeSync(1, 'raw\n');\nconsole.log(process.stdout.isTTY, process.stdout.constructor.name, process.stderr.constructor.name, process.stdout.writableLength);\nconsole.error('to stderr');"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Language = lang
			w, k := runWarmAndCold(t, warm, cold, c.req)
			if w.Status != k.Status || w.ExitCode != k.ExitCode || w.Signal != k.Signal || w.Stdout != k.Stdout || w.Stderr != k.Stderr {
				t.Errorf("warm: %s exit %d signal %q\nstdout %q\nstderr %q\ncold (%s main.js): %s exit %d signal %q\nstdout %q\nstderr %q",
					w.Status, w.ExitCode, w.Signal, w.Stdout, w.Stderr, node, k.Status, k.ExitCode, k.Signal, k.Stdout, k.Stderr)
			}
		})
	}
	// The comparisons above hold only if the warm runs did run in the node
	// started ahead: its command line still shows the preload it started
	// with (the one thing a program can see of it), and a request with its
	// own environment gets a node of its own.
	for _, c := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"the run goes to the node started ahead", nil, node + " --require /tmp/.mcr-warm-"},
		{"a run with its own environment gets a node of its own", map[string]string{"MINE": "1"}, node + " main.js"},
	} {
		t.Run(c.name, func(t *testing.T) {
			waitIdle(t, warm, lang, 1)
			r, err := warm.Run(context.Background(), engine.Request{Language: lang, Env: c.env,
				Code: "console.log(require('fs').readFileSync('/proc/self/cmdline', 'utf8').split('\\0').join(' '));"}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(r.Stdout, c.want) {
				t.Errorf("the program's command line is %q, want it to start with %q", r.Stdout, c.want)
			}
		})
	}
}

// runWarmAndCold runs req in a warm sandbox (once the pool has one idle)
// and then in a cold one, for the caller to compare the two results.
func runWarmAndCold(t *testing.T, warm, cold *engine.Engine, req engine.Request) (w, k *engine.Result) {
	t.Helper()
	waitIdle(t, warm, req.Language, 1)
	w, err := warm.Run(context.Background(), req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k, err = cold.Run(context.Background(), req, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return w, k
}

// TestWarmTypeScriptRunsAsNode: TypeScript's run stage (`node
// /tmp/build/main.js`, after tsc) goes to the node a warm sandbox started
// ahead, as JavaScript's does; each program's result must equal a cold
// sandbox's, whose run stage is that plain command.
func TestWarmTypeScriptRunsAsNode(t *testing.T) {
	cold := coldEngine(t)
	warm := pooledEngineFor(t, "typescript", 1)
	cases := []struct {
		name string
		req  engine.Request
	}{
		{"argv, __filename and require.main", engine.Request{Args: []string{"a b", "c"},
			Code: "const n: number = 1;\nconsole.log(JSON.stringify({argv: process.argv, file: __filename, main: require.main === module, cwd: process.cwd(), n}));"}},
		{"a type error is reported and the program still runs", engine.Request{Code: "function f(x) { return x * 2; }\nconsole.log(f(21));"}},
		{"uncaught exception and its stack trace", engine.Request{Code: "function f(): never {\n  throw new Error('boom');\n}\nconsole.log('before');\nf();"}},
		{"exit code", engine.Request{Code: "console.log('out');\nprocess.exit(3);"}},
		{"stdin", engine.Request{Code: "import * as fs from 'fs';\nconsole.log(JSON.stringify(fs.readFileSync(0, 'utf8')));", Stdin: "line 1\n"}},
		{"a syntax error stops the run before node", engine.Request{Code: "console.log('x'\n"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.Language = "typescript"
			w, k := runWarmAndCold(t, warm, cold, c.req)
			if w.Status != k.Status || w.ExitCode != k.ExitCode || w.Stdout != k.Stdout || w.Stderr != k.Stderr || w.TypeErrors != k.TypeErrors {
				t.Errorf("warm: %s exit %d type errors %d\nstdout %q\nstderr %q\ncold: %s exit %d type errors %d\nstdout %q\nstderr %q",
					w.Status, w.ExitCode, w.TypeErrors, w.Stdout, w.Stderr, k.Status, k.ExitCode, k.TypeErrors, k.Stdout, k.Stderr)
			}
		})
	}
	t.Run("the run goes to the node started ahead", func(t *testing.T) {
		waitIdle(t, warm, "typescript", 1)
		r, err := warm.Run(context.Background(), engine.Request{Language: "typescript",
			Code: "import * as fs from 'fs';\nconsole.log(fs.readFileSync('/proc/self/cmdline', 'utf8').split('\\0').join(' '));"}, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if want := "node --require /tmp/.mcr-warm-"; !strings.HasPrefix(r.Stdout, want) {
			t.Errorf("the program's command line is %q, want it to start with %q", r.Stdout, want)
		}
	})
}
