//go:build !fast

package pool_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// pooledEngine returns an engine whose bash runs come from a warm pool.
func pooledEngine(t *testing.T, size int) *engine.Engine {
	return pooledEngineFor(t, "bash", size)
}

// pooledEngineFor returns an engine with a warm pool of size for lang only.
func pooledEngineFor(t *testing.T, lang string, size int) *engine.Engine {
	t.Helper()
	cfg := config.Default()
	cfg.Pool.Size = 0
	cfg.Pool.Sizes = []string{lang + "=" + itoa(size)}
	e, b := testutil.Engine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), lang)
	e.StartPool()
	closeAtEnd(t, e, b.Client())
	waitIdle(t, e, lang, size)
	return e
}

// closeAtEnd closes c (an engine or a pool) when the test ends and checks
// that no container was left behind.
func closeAtEnd(t *testing.T, c interface{ Close(context.Context) error }, cli *client.Client) {
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := c.Close(ctx); err != nil {
			t.Error(err)
		}
		testutil.NoLeftovers(t, cli)
	})
}

func itoa(n int) string { return strconv.Itoa(n) }

func waitIdle(t *testing.T, e *engine.Engine, lang string, n int) {
	t.Helper()
	testutil.Eventually(t, 30*time.Second, func() bool {
		for _, s := range e.PoolStats() {
			if s.Language == lang && s.Idle >= n {
				return true
			}
		}
		return false
	}, "the pool for "+lang+" to have "+itoa(n)+" idle")
}

// TestNoSandboxServesTwoRuns leaves a marker file and a detached process in
// run N and checks that run N+1, from the same pool, sees neither.
func TestNoSandboxServesTwoRuns(t *testing.T) {
	e := pooledEngine(t, 1)
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 4 {
		r, err := e.Run(ctx, engine.Request{Language: "bash", Code: `
ls /tmp/marker /workspace/marker 2>/dev/null && echo FOUND-MARKER
pgrep -f "sleep 4242" >/dev/null && echo FOUND-PROCESS
touch /tmp/marker /workspace/marker
setsid sleep 4242 </dev/null >/dev/null 2>&1 &
cat /proc/sys/kernel/hostname`}, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(r.Stdout, "FOUND") {
			t.Fatalf("run %d saw what an earlier run left: %q", i, r.Stdout)
		}
		host := strings.TrimSpace(r.Stdout)
		if seen[host] {
			t.Fatalf("run %d ran in a container (%s) that served an earlier run", i, host)
		}
		seen[host] = true
	}
	for _, s := range e.PoolStats() {
		if s.Served < 4 {
			t.Errorf("the runs did not come from the pool: %+v", s)
		}
	}
}

// TestPoolReplacesDeadSandbox kills an idle pooled container from outside;
// the pool notices, replaces it, and runs keep working.
func TestPoolReplacesDeadSandbox(t *testing.T) {
	e := pooledEngine(t, 1)
	cli := testutil.RequireDocker(t)
	// Only this test process's own: test binaries of other packages run at
	// the same time, with bash sandboxes of their own.
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", "io.mcp-code-runner.purpose=bash").
			Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid())),
	})
	if err != nil || len(list.Items) == 0 {
		t.Fatalf("no pooled container found: %v", err)
	}
	var pids []int
	for _, c := range list.Items {
		if ins, err := cli.ContainerInspect(context.Background(), c.ID, client.ContainerInspectOptions{}); err == nil && ins.Container.State != nil {
			pids = append(pids, ins.Container.State.Pid)
		}
	}
	seen := len(pids) > 0 && hostView(pids[0])
	for _, c := range list.Items {
		_, _ = cli.ContainerKill(context.Background(), c.ID, client.ContainerKillOptions{Signal: "KILL"})
	}
	// The pool learns of a death when the container's attached stream ends,
	// a few milliseconds after the agent's. A run in between takes the dead
	// sandbox: its job cannot reach the agent (its socket is closed, or,
	// under load, it had not connected yet), and the engine gives it to
	// another sandbox. So the run goes right after
	// the agents are gone, inside that window, and must work all the same.
	// (Without a view of the host's processes, it waits for the daemon.)
	for _, pid := range pids {
		testutil.WaitProcessGone(pid, 10*time.Second)
	}
	if !seen {
		testutil.WaitFor(10*time.Second, func() bool {
			s := e.PoolStats()
			return len(s) > 0 && (s[0].Replaced > 0 || s[0].Idle == 0)
		})
	}
	r, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo alive"}, engine.RunOptions{})
	if err != nil || r.Stdout != "alive\n" {
		t.Fatalf("run after the kill: %v %+v", err, r)
	}
	waitIdle(t, e, "bash", 1)
	// The pool saw the death while the sandbox was idle (Replaced), or
	// handed it out first and the run took another (a second Served):
	// which one depends on how fast the daemon reports the death.
	for _, s := range e.PoolStats() {
		if s.Replaced == 0 && s.Served < 2 {
			t.Errorf("the dead sandbox was neither replaced nor passed over: %+v", s)
		}
	}
}

// hostView reports whether this process sees the host's process pid (it
// runs in the daemon's PID namespace).
func hostView(pid int) bool {
	_, err := os.Stat("/proc/" + strconv.Itoa(pid))
	return pid > 0 && err == nil
}

// TestPrestartedCompilerServesWarmRuns checks Kotlin's warm path: the pool's
// sandbox starts the compiler before the job (the registry's prestart), the
// job's compile goes to it, its messages come back in the compile stage, and
// nothing of it is left when the program runs.
func TestPrestartedCompilerServesWarmRuns(t *testing.T) {
	e := pooledEngineFor(t, "kotlin", 1)
	ctx := context.Background()
	// A compile stage that ran the compiler itself would hold a JVM of more
	// than 100 MiB; the script that hands the job to the warm compiler is a
	// shell and a few small processes.
	const noJVMKB = 64 << 10

	cases := []struct {
		name, code, status, stdout, compileErr string
	}{
		{"hello", "fun main() {\n    println(\"hello, world\")\n}\n", engine.StatusOK, "hello, world\n", ""},
		{"type error", "fun main() {\n    val n: Int = \"text\"\n    println(n)\n}\n", engine.StatusCompileError, "", "type mismatch"},
		{"no compiler left behind", `fun main() {
    val left = java.io.File("/proc").listFiles()!!.filter { it.name.all(Char::isDigit) }
        .map { runCatching { java.io.File(it, "cmdline").readText() }.getOrDefault("") }
        .count { it.contains("KotlincServer") }
    println("servers: " + left)
}
`, engine.StatusOK, "servers: 0\n", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			waitIdle(t, e, "kotlin", 1)
			r, err := e.Run(ctx, engine.Request{Language: "kotlin", Code: c.code}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != c.status || r.Stdout != c.stdout {
				t.Fatalf("status %s, stdout %q; want %s, %q (compile: %+v)", r.Status, r.Stdout, c.status, c.stdout, r.Compile)
			}
			if r.Compile == nil {
				t.Fatal("no compile stage")
			}
			if !strings.Contains(r.Compile.Stderr, c.compileErr) {
				t.Errorf("compile stderr %q, want it to contain %q", r.Compile.Stderr, c.compileErr)
			}
			if r.Compile.MaxMemoryKB > noJVMKB {
				t.Errorf("the compile stage peaked at %d KiB: it started a JVM instead of using the warm compiler", r.Compile.MaxMemoryKB)
			}
		})
	}
}

// warmCase is a run in a warm sandbox and what it must show.
type warmCase struct {
	name           string
	req            engine.Request
	status, stdout string
	exit           int
	stderr         string
}

// runWarmCases runs each case in a fresh sandbox of lang's pool of one,
// after pause (so that what counts time since the sandbox started shows it).
func runWarmCases(t *testing.T, e *engine.Engine, lang string, pause time.Duration, cases []warmCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			waitIdle(t, e, lang, 1)
			time.Sleep(pause)
			c.req.Language = lang
			r, err := e.Run(context.Background(), c.req, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != c.status || r.Stdout != c.stdout || r.ExitCode != c.exit || !strings.HasPrefix(r.Stderr, c.stderr) {
				t.Errorf("got %s exit %d stdout %q stderr %q; want %s exit %d stdout %q stderr starting %q",
					r.Status, r.ExitCode, r.Stdout, r.Stderr, c.status, c.exit, c.stdout, c.stderr)
			}
		})
	}
}

// TestWarmPythonBehavesAsPython3 runs Python programs in warm sandboxes,
// whose agent started the interpreter before the job, and checks what a
// program sees and what the result says against `python3 -u main.py`. A
// request with its own environment gets a python3 started for it.
func TestWarmPythonBehavesAsPython3(t *testing.T) {
	e := pooledEngineFor(t, "python", 1)
	const probe = `import os, sys
warm = open("/proc/self/cmdline").read().split("\0")[2] == "-c"
print("warm" if warm else "cold", __name__, __file__, sys.argv, sys.path[0], os.environ.get("MINE"), repr(sys.stdin.read()))
`
	runWarmCases(t, e, "python", 0, []warmCase{
		{"argv stdin and path", engine.Request{Code: probe, Args: []string{"a b", "c"}, Stdin: "in"}, engine.StatusOK,
			"warm __main__ /workspace/main.py ['main.py', 'a b', 'c'] /workspace None 'in'\n", 0, ""},
		{"own environment", engine.Request{Code: probe, Env: map[string]string{"MINE": "1"}}, engine.StatusOK,
			"cold __main__ /workspace/main.py ['main.py'] /workspace 1 ''\n", 0, ""},
		{"exit code", engine.Request{Code: "import sys\nprint('out')\nsys.exit(3)"}, engine.StatusError, "out\n", 3, ""},
		{"exception", engine.Request{Code: "def f():\n    raise KeyError('k')\nf()\n"}, engine.StatusError, "", 1,
			"Traceback (most recent call last):\n  File \"/workspace/main.py\", line 3, in <module>\n    f()\n"},
		{"syntax error", engine.Request{Code: "print('x'\n"}, engine.StatusError, "", 1, "  File \"/workspace/main.py\", line 1\n"},
		{"pickle of a class in __main__", engine.Request{Code: "import pickle\nclass P: pass\nprint(type(pickle.loads(pickle.dumps(P()))).__name__)"},
			engine.StatusOK, "P\n", 0, ""},
	})
}

// TestWarmBashBehavesAsBash runs scripts in the warm bash of a pool
// sandbox (started with the sandbox, reading main.sh from a FIFO) and
// checks what `bash main.sh` started for the run would show.
func TestWarmBashBehavesAsBash(t *testing.T) {
	e := pooledEngine(t, 1)
	// The bash that runs the script started with the sandbox (warm) or for
	// the run (cold). A warm bash opened main.sh while it was the FIFO the
	// agent has since unlinked, so its script descriptor (255) names a
	// deleted file; a cold bash's names the script itself. (A comparison of
	// start times would depend on the host's load.) $SECONDS is read first
	// thing: later, on a loaded machine, the subshells could take a second.
	// It counts whole seconds of the clock, so a bash that starts just
	// before a second ends reads 1 at once: up to 1 prints as 0.
	const probe = `secs=$(( SECONDS <= 1 ? 0 : SECONDS ))
[[ $(readlink /proc/$$/fd/255) == *" (deleted)" ]] && echo -n "warm " || echo -n "cold "
echo "$0 $# [$*] ${BASH_SOURCE[0]} $LINENO $secs $(cat /proc/$$/cmdline | tr '\0' ' ')$MINE"
(return 0 2>/dev/null) && echo sourced || echo "not sourced"
ls -l main.sh | cut -c1; ls /workspace; echo "stdin: $(cat)"
`
	runWarmCases(t, e, "bash", 1100*time.Millisecond, // $SECONDS would count the pause
		[]warmCase{
			{"script", engine.Request{Code: probe, Stdin: "in"}, engine.StatusOK,
				"warm main.sh 0 [] main.sh 3 0 bash main.sh \nnot sourced\n-\nmain.sh\nstdin: in\n", 0, ""},
			{"arguments", engine.Request{Code: probe, Args: []string{"a b"}}, engine.StatusOK,
				"cold main.sh 1 [a b] main.sh 3 0 bash main.sh a b \nnot sourced\n-\nmain.sh\nstdin: \n", 0, ""},
			{"own environment", engine.Request{Code: probe, Env: map[string]string{"MINE": "1"}}, engine.StatusOK,
				"cold main.sh 0 [] main.sh 3 0 bash main.sh 1\nnot sourced\n-\nmain.sh\nstdin: \n", 0, ""},
			{"exit code and errors", engine.Request{Code: "echo out\nnosuch\nexit 3"}, engine.StatusError, "out\n", 3,
				"main.sh: line 2: nosuch: command not found\n"},
			{"syntax error", engine.Request{Code: "if true; then\necho x\n"}, engine.StatusError, "", 2,
				"main.sh: line 3: syntax error: unexpected end of file"},
			{"a script larger than a pipe's buffer", engine.Request{Code: strings.Repeat("# padding\n", 20000) + "echo end $LINENO"},
				engine.StatusOK, "end 20001\n", 0, ""},
		})
}
