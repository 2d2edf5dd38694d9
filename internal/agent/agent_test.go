package agent

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func TestEveryKernelAndWarmProgramOfTheRegistryIsBuiltIn(t *testing.T) {
	for _, l := range languages.Builtin().Languages() {
		if l.Kernel != nil && !wire.HasProgram(l.Kernel.Name) {
			t.Errorf("language %s: kernel %q is not built in", l.Name, l.Kernel.Name)
		}
		if l.Warm != nil && !wire.HasWarmProgram(l.Warm.Name) {
			t.Errorf("language %s: warm program %q is not built in", l.Name, l.Warm.Name)
		}
	}
}

// serve runs a request through Serve on this host (KillStragglers stays off)
// and decodes the frames.
func serve(t *testing.T, req wire.Request) (stages []wire.StageResult, stdout, stderr map[uint8]string, done wire.Done) {
	t.Helper()
	payload, _ := json.Marshal(req)
	var in, out bytes.Buffer
	if err := wire.WriteFrame(&in, wire.Frame{Kind: wire.KindRequest, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if err := Serve(&in, &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	stdout, stderr = map[uint8]string{}, map[uint8]string{}
	for {
		f, err := wire.ReadFrame(&out)
		if err == io.EOF {
			t.Fatal("no Done frame")
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f.Kind {
		case wire.KindStdout:
			stdout[f.Stage] += string(f.Payload)
		case wire.KindStderr:
			stderr[f.Stage] += string(f.Payload)
		case wire.KindStage:
			var r wire.StageResult
			_ = json.Unmarshal(f.Payload, &r)
			stages = append(stages, r)
		case wire.KindDone:
			_ = json.Unmarshal(f.Payload, &done)
			return stages, stdout, stderr, done
		}
	}
}

func TestServeStages(t *testing.T) {
	dir := t.TempDir()
	stages, stdout, stderr, done := serve(t, wire.Request{
		Workdir:     dir,
		OutputLimit: 10,
		Files:       []wire.File{{Path: "sub/in.txt", Data: []byte("from file")}},
		Stages: []wire.Stage{
			{Name: "compile", Argv: []string{"sh", "-c", "cat sub/in.txt; echo warn >&2"}, TimeoutMs: unhurried, StopOnFailure: true},
			{Name: "run", Argv: []string{"sh", "-c", "cat; echo 0123456789ABCDEF; exit 4", "x"}, Stdin: []byte("in:"), TimeoutMs: unhurried},
		},
	})
	if done.Error != "" || len(stages) != 2 {
		t.Fatalf("done %+v, stages %+v", done, stages)
	}
	if stdout[0] != "from file" || stderr[0] != "warn\n" || stages[0].ExitCode != 0 {
		t.Errorf("compile: stdout %q stderr %q %+v", stdout[0], stderr[0], stages[0])
	}
	// 3 + 17 bytes written, 10 forwarded.
	if stdout[1] != "in:0123456" || stages[1].StdoutBytes != 20 || stages[1].StdoutDropped != 10 || stages[1].ExitCode != 4 {
		t.Errorf("run: stdout %q %+v", stdout[1], stages[1])
	}
	if data, _ := os.ReadFile(filepath.Join(dir, "sub/in.txt")); string(data) != "from file" {
		t.Errorf("file content %q", data)
	}
}

func TestServeStopsAfterFailedStageAndTimesOut(t *testing.T) {
	stages, _, _, _ := serve(t, wire.Request{Workdir: t.TempDir(), OutputLimit: 100, Stages: []wire.Stage{
		{Name: "compile", Argv: []string{"sh", "-c", "exit 2"}, TimeoutMs: unhurried, StopOnFailure: true},
		{Name: "run", Argv: []string{"true"}, TimeoutMs: unhurried},
	}})
	if len(stages) != 1 || stages[0].ExitCode != 2 {
		t.Errorf("stages %+v; want only the failed compile", stages)
	}
	stages, stdout, _, _ := serve(t, wire.Request{Workdir: t.TempDir(), OutputLimit: 100, Stages: []wire.Stage{
		// 3 s: long enough for sh to print "a" on a loaded machine first.
		{Name: "run", Argv: []string{"sh", "-c", "echo a; sleep 30"}, TimeoutMs: 3000},
	}})
	if len(stages) != 1 || !stages[0].TimedOut || stages[0].Signal != "SIGKILL" || stdout[0] != "a\n" {
		t.Errorf("timeout: %+v stdout %q", stages, stdout[0])
	}
	stages, _, _, _ = serve(t, wire.Request{Workdir: t.TempDir(), Stages: []wire.Stage{{Name: "run", Argv: []string{"/no/such/cmd"}, TimeoutMs: unhurried}}})
	if stages[0].ExitCode != 127 || !strings.Contains(stages[0].Error, "/no/such/cmd") {
		t.Errorf("missing command: %+v", stages[0])
	}
}

func TestServeRefusesBadPaths(t *testing.T) {
	dir := t.TempDir()
	outside := filepath.Join(filepath.Dir(dir), "escaped.txt")
	// A symlink planted in the workspace must not be followed by a write.
	if err := os.Symlink(filepath.Dir(dir), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"../escaped.txt", "/abs.txt", "link/escaped.txt"} {
		stages, _, _, done := serve(t, wire.Request{Workdir: dir, Files: []wire.File{{Path: p, Data: []byte("x")}}, Stages: []wire.Stage{{Name: "run", Argv: []string{"true"}, TimeoutMs: unhurried}}})
		if done.Error == "" || len(stages) != 0 {
			t.Errorf("path %q: done %+v stages %d; want a refusal and no stage run", p, done, len(stages))
		}
	}
	if _, err := os.Stat(outside); err == nil {
		t.Errorf("a file escaped the workspace")
	}
}

// TestPrestartHoldsTheFirstJob starts a prestart command that takes a while
// to make what the job needs, and checks that the job waits for it to close
// its output, and that it gets the stages' environment, not the agent's MCR_
// variables.
func TestPrestartHoldsTheFirstJob(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("MCR_SECRET", "agent-only")
	spec, _ := json.Marshal(wire.Prestart{
		Argv: []string{"sh", "-c", `sleep 0.3; echo "made ${MCR_SECRET:-none} $LANG_EXTRA" > "$1/marker"; exec >/dev/null; sleep 1`, "prestart", dir},
		Env:  []string{"LANG_EXTRA=extra"},
	})
	if err := StartPrestart(string(spec)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prestarted = nil })
	stages, stdout, _, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 100, Stages: []wire.Stage{
		{Name: "compile", Argv: []string{"cat", "marker"}, TimeoutMs: unhurried},
	}})
	if done.Error != "" || len(stages) != 1 || stages[0].ExitCode != 0 {
		t.Fatalf("done %+v, stages %+v", done, stages)
	}
	if stdout[0] != "made none extra\n" {
		t.Errorf("the job saw %q, want the prestart's marker without agent variables", stdout[0])
	}
}

func TestPrestartRejectsBadSpecs(t *testing.T) {
	for _, spec := range []string{"[", `{"argv":[]}`, `"sh"`} {
		if err := StartPrestart(spec); err == nil || !strings.Contains(err.Error(), wire.PrestartEnv) {
			t.Errorf("StartPrestart(%q) = %v, want an error naming %s", spec, err, wire.PrestartEnv)
		}
	}
	if err := StartPrestart(""); err != nil {
		t.Errorf("no prestart: %v", err)
	}
}

// startWarmIn starts the warm interpreter w in a new directory, made the
// working directory, and returns it; the test forgets the interpreter at
// its end.
func startWarmIn(t *testing.T, w wire.Warm) string {
	t.Helper()
	dir := t.TempDir()
	t.Chdir(dir)
	spec, _ := json.Marshal(w)
	if err := StartWarm(string(spec)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { warm = nil })
	return dir
}

// unhurried is the timeout of a stage whose test is not about timeouts:
// long enough for a loaded CI machine to start an interpreter.
const unhurried = 120_000

// TestWarmInterpreterRunsTheScriptAsPython starts the warm Python
// interpreter and checks that a run stage handed to it behaves as
// `python3 -u main.py ARGS` would; a stage that does not fit (other
// environment) gets a python3 of its own.
func TestWarmInterpreterRunsTheScriptAsPython(t *testing.T) {
	requireHostCommand(t, "python3")
	const script = `import os, sys
warm = open("/proc/self/cmdline").read().split("\0")[2] == "-c"
print("warm" if warm else "cold", __name__, os.path.basename(__file__), sys.argv, sys.path[0] == os.getcwd(), os.environ.get("LANG_ENV"), sys.stdin.read())
def f():
    raise ValueError("boom")
f()
`
	env := []string{"LANG_ENV=yes"}
	cases := []struct {
		name string
		env  []string
		want string
	}{
		{"fits", env, "warm __main__ main.py ['main.py', 'a b', 'c'] True yes in\n"},
		{"other env", []string{"LANG_ENV=yes", "USER_ENV=1"}, "cold __main__ main.py ['main.py', 'a b', 'c'] True yes in\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := startWarmIn(t, wire.Warm{Name: "python_warm.py", Argv: []string{"python3", "-u", "-c", "{program}"}, Env: env, Replaces: []string{"python3", "-u", "main.py"}})
			stages, stdout, stderr, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 4096,
				Files: []wire.File{{Path: "main.py", Data: []byte(script)}},
				Stages: []wire.Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py", "a b", "c"}, Env: c.env,
					Stdin: []byte("in"), TimeoutMs: unhurried}}})
			if done.Error != "" || len(stages) != 1 {
				t.Fatalf("done %+v, stages %+v", done, stages)
			}
			if stdout[0] != c.want {
				t.Errorf("stdout %q, want %q (stderr %q)", stdout[0], c.want, stderr[0])
			}
			if stages[0].ExitCode != 1 {
				t.Errorf("exit code %d, want 1 (an uncaught exception)", stages[0].ExitCode)
			}
			tb := stderr[0]
			if !strings.HasPrefix(tb, "Traceback (most recent call last):\n  File \""+filepath.Join(dir, "main.py")+"\", line 6, in <module>") ||
				!strings.HasSuffix(tb, "ValueError: boom\n") || strings.Contains(tb, "_mcr_run") {
				t.Errorf("traceback is not the script's alone:\n%s", tb)
			}
			if warm != nil {
				t.Error("the warm interpreter is still waiting after the stage")
			}
		})
	}
}

// TestWarmInterpreterReportsSyntaxErrors checks a script that does not
// compile: Python's own message, exit code 1.
func TestWarmInterpreterReportsSyntaxErrors(t *testing.T) {
	requireHostCommand(t, "python3")
	dir := startWarmIn(t, wire.Warm{Name: "python_warm.py", Argv: []string{"python3", "-u", "-c", "{program}"}, Replaces: []string{"python3", "-u", "main.py"}})
	stages, _, stderr, _ := serve(t, wire.Request{Workdir: dir, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.py", Data: []byte("print('ok'\n")}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py"}, TimeoutMs: unhurried}}})
	if len(stages) != 1 || stages[0].ExitCode != 1 || !strings.Contains(stderr[0], "SyntaxError") || strings.Contains(stderr[0], "Traceback") {
		t.Errorf("stages %+v, stderr %q", stages, stderr[0])
	}
}

// TestWarmScriptInterpreterRunsTheScriptAsBash starts bash as a warm
// script interpreter (reading main.sh from a FIFO) and checks that a run
// handed to it behaves as `bash main.sh` started afresh: $0, the script's
// source, line numbers, not being a sourced file, $SECONDS from zero,
// stdin, error messages, exit code, and a workspace whose main.sh is the
// regular file the job wrote. A stage with arguments or another
// environment gets a bash of its own.
func TestWarmScriptInterpreterRunsTheScriptAsBash(t *testing.T) {
	requireHostCommand(t, "bash")
	const script = `#!/bin/bash
echo "0=$0 args=$# [$*] src=${BASH_SOURCE[*]} line=$LINENO seconds=$SECONDS env=$LANG_ENV"
(return 0 2>/dev/null) && echo sourced || echo "not sourced"
test -f main.sh && ! test -p main.sh && echo "main.sh is a file of $(wc -l < main.sh) lines"
echo "stdin: $(cat)"
echo "pid $$" >&2
nosuch
exit 3
`
	env := []string{"LANG_ENV=yes"}
	cases := []struct {
		name string
		argv []string
		env  []string
		warm bool
		want string
	}{
		{"fits", []string{"bash", "main.sh"}, env, true,
			"0=main.sh args=0 [] src=main.sh line=2 seconds=0 env=yes\nnot sourced\nmain.sh is a file of 8 lines\nstdin: in\n"},
		{"arguments", []string{"bash", "main.sh", "a b"}, env, false,
			"0=main.sh args=1 [a b] src=main.sh line=2 seconds=0 env=yes\nnot sourced\nmain.sh is a file of 8 lines\nstdin: in\n"},
		{"other env", []string{"bash", "main.sh"}, []string{"LANG_ENV=no"}, false,
			"0=main.sh args=0 [] src=main.sh line=2 seconds=0 env=no\nnot sourced\nmain.sh is a file of 8 lines\nstdin: in\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := startWarmIn(t, wire.Warm{Name: wire.ScriptWarm, Argv: []string{"bash", "main.sh"}, Env: env, Replaces: []string{"bash", "main.sh"}, Script: "main.sh"})
			warmPID := warm.cmd.Process.Pid
			time.Sleep(1100 * time.Millisecond) // so that $SECONDS would show the wait
			stages, stdout, stderr, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 4096,
				Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
				Stages: []wire.Stage{{Name: "run", Argv: c.argv, Env: c.env, Stdin: []byte("in"), TimeoutMs: unhurried}}})
			if done.Error != "" || len(stages) != 1 {
				t.Fatalf("done %+v, stages %+v", done, stages)
			}
			if stdout[0] != c.want {
				t.Errorf("stdout %q, want %q", stdout[0], c.want)
			}
			if stages[0].ExitCode != 3 {
				t.Errorf("exit code %d, want 3", stages[0].ExitCode)
			}
			wantErr := "main.sh: line 7: nosuch: command not found\n"
			if !strings.HasSuffix(stderr[0], wantErr) {
				t.Errorf("stderr %q, want it to end with %q", stderr[0], wantErr)
			}
			if usedWarm := strings.HasPrefix(stderr[0], "pid "+strconv.Itoa(warmPID)+"\n"); usedWarm != c.warm {
				t.Errorf("ran in the warm bash: %v, want %v (warm pid %d, stderr %q)", usedWarm, c.warm, warmPID, stderr[0])
			}
			if warm != nil {
				t.Error("the warm interpreter is still waiting after the stage")
			}
		})
	}
}

// TestWarmScriptInterpreterThatDied checks that a run whose warm bash died
// while it waited gets a bash of its own.
func TestWarmScriptInterpreterThatDied(t *testing.T) {
	requireHostCommand(t, "bash")
	dir := startWarmIn(t, wire.Warm{Name: wire.ScriptWarm, Argv: []string{"bash", "main.sh"}, Replaces: []string{"bash", "main.sh"}, Script: "main.sh"})
	pid := warm.cmd.Process.Pid
	fifo := filepath.Join(dir, "main.sh")
	if !waitFor(10*time.Second, func() bool { return hasOpen(pid, fifo) }) {
		t.Fatal("the warm bash never opened its script FIFO")
	}
	if err := warm.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(10*time.Second, func() bool { return !alive(pid) }) {
		t.Fatal("the killed warm bash is still alive")
	}
	stages, stdout, _, done := serve(t, wire.Request{Workdir: dir, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte("echo fine")}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: unhurried}}})
	if done.Error != "" || len(stages) != 1 || stages[0].ExitCode != 0 || stdout[0] != "fine\n" {
		t.Errorf("done %+v, stages %+v, stdout %q", done, stages, stdout[0])
	}
}

// requireHostCommand skips a test that runs name on this host when the host
// lacks it, except under CI=true, where it fails: CI's machines have
// python3, node and bash, and a skip there would hide a lost test.
func requireHostCommand(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is required on the host under CI=true: %v", name, err)
		}
		t.Skipf("%s is not installed (set CI=true to make this fail)", name)
	}
}

// waitFor waits until cond holds or limit passes, and reports whether it
// holds. (testutil has the same; it imports this package.)
func waitFor(limit time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(limit); !cond(); {
		if time.Now().After(deadline) {
			return false
		}
		<-time.After(5 * time.Millisecond)
	}
	return true
}

// hasOpen reports whether process pid has path open.
func hasOpen(pid int, path string) bool {
	fds, _ := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	for _, fd := range fds {
		if target, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/fd/" + fd.Name()); err == nil && target == path {
			return true
		}
	}
	return false
}

// alive reports whether process pid exists and has not exited (a zombie
// has).
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// The state follows the command name, which is in parentheses and may
	// itself contain them.
	i := bytes.LastIndexByte(data, ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z' && data[i+2] != 'X'
}

func TestServeSavesTheCodeWhereItsEntryPointConventionSays(t *testing.T) {
	dir := t.TempDir()
	stages, stdout, _, done := serve(t, wire.Request{
		Workdir: dir, OutputLimit: 1 << 10, Entry: "java",
		Files: []wire.File{{Path: "Main.java", Data: []byte("package p;\npublic class Solution { public static void main(String[] a) {} }")}},
		Stages: []wire.Stage{
			{Name: "compile", Argv: []string{"sh", "-c", "ls; echo \"$1\"", "sh", "{file}"}, TimeoutMs: unhurried, StopOnFailure: true},
			{Name: "run", Argv: []string{"echo", "{main}"}, TimeoutMs: unhurried},
		},
	})
	if done.Error != "" || len(stages) != 2 {
		t.Fatalf("done %+v, stages %+v", done, stages)
	}
	if stdout[0] != "Solution.java\nSolution.java\n" || stdout[1] != "p.Solution\n" {
		t.Errorf("compile stdout %q, run stdout %q", stdout[0], stdout[1])
	}
}

func TestServeRefusesCodeWithoutAnEntryPointInTheFirstStage(t *testing.T) {
	cases := []struct {
		name  string
		files []wire.File
		want  string
	}{
		{"two public classes", []wire.File{{Path: "Main.java", Data: []byte("public class A {}\npublic class B {}")}}, "2 public top-level classes (A, B)"},
		{"the file the code needs is taken", []wire.File{
			{Path: "Main.java", Data: []byte("public class App { public static void main(String[] a) {} }")},
			{Path: "App.java", Data: []byte("class Other {}")}}, "must be saved as App.java, which the request's files also give"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			stages, _, stderr, done := serve(t, wire.Request{
				Workdir: dir, OutputLimit: 1 << 10, Entry: "java", Files: c.files,
				Stages: []wire.Stage{
					{Name: "compile", Argv: []string{"touch", "compiled"}, TimeoutMs: unhurried, StopOnFailure: true},
					{Name: "run", Argv: []string{"touch", "ran"}, TimeoutMs: unhurried},
				},
			})
			if done.Error != "" || len(stages) != 1 || stages[0].Name != "compile" || stages[0].ExitCode != 1 || !strings.Contains(stderr[0], c.want) {
				t.Fatalf("done %+v, stages %+v, stderr %q; want the compile stage to fail with %q", done, stages, stderr, c.want)
			}
			if entries, _ := os.ReadDir(dir); len(entries) != 0 {
				t.Errorf("the workspace has %d entries; nothing should be written or run", len(entries))
			}
		})
	}
}

func TestServeRefusesALanguageOfAnotherArchitectureBeforeItsFirstStage(t *testing.T) {
	other := "arm64"
	if runtime.GOARCH == "arm64" {
		other = "amd64"
	}
	refusal := "Crystal runs only in " + other + " sandboxes: Debian packages its compiler for " + other + " only"
	stagesOf := func() []wire.Stage {
		return []wire.Stage{
			{Name: "compile", Argv: []string{"touch", "compiled"}, TimeoutMs: unhurried, StopOnFailure: true},
			{Name: "run", Argv: []string{"touch", "ran"}, TimeoutMs: unhurried},
		}
	}
	t.Run("another architecture's language fails its first stage with the reason and this machine's architecture", func(t *testing.T) {
		dir := t.TempDir()
		stages, _, stderr, done := serve(t, wire.Request{
			Workdir: dir, OutputLimit: 1 << 10, Files: []wire.File{{Path: "main.cr", Data: []byte(`puts "hi"`)}},
			Architectures: []string{other}, ArchitectureRefusal: refusal, Stages: stagesOf(),
		})
		want := "error: " + refusal + " (this sandbox is linux/" + runtime.GOARCH + ")\n"
		if done.Error != "" || len(stages) != 1 || stages[0].Name != "compile" || stages[0].ExitCode != 2 || stderr[0] != want {
			t.Fatalf("done %+v, stages %+v, stderr %q; want the compile stage to fail with exit code 2 and %q", done, stages, stderr, want)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Errorf("the workspace has %d entries; nothing should be written or run", len(entries))
		}
	})
	t.Run("a language of this machine's architecture runs", func(t *testing.T) {
		dir := t.TempDir()
		stages, _, _, done := serve(t, wire.Request{
			Workdir: dir, OutputLimit: 1 << 10, Architectures: []string{other, runtime.GOARCH}, ArchitectureRefusal: refusal, Stages: stagesOf(),
		})
		if done.Error != "" || len(stages) != 2 || stages[1].ExitCode != 0 {
			t.Fatalf("done %+v, stages %+v; want both stages to run", done, stages)
		}
	})
}
