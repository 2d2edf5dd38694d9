package agent

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []Frame{{Kind: KindStdout, Stage: 1, Payload: []byte("hi")}, {Kind: KindDone, Payload: []byte("{}")}, {Kind: KindStderr}}
	for _, f := range in {
		if err := WriteFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range in {
		got, err := ReadFrame(&buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Kind != want.Kind || got.Stage != want.Stage || !bytes.Equal(got.Payload, want.Payload) {
			t.Errorf("frame %d = %+v, want %+v", i, got, want)
		}
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestReadFrameRejects(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"unknown kind", []byte{'Z', 0, 0, 0, 0, 0}, ErrBadFrame},
		{"oversized", []byte{'O', 0, 0xff, 0xff, 0xff, 0xff}, ErrBadFrame},
		{"cut header", []byte{'O', 0, 0}, io.ErrUnexpectedEOF},
		{"cut payload", []byte{'O', 0, 0, 0, 0, 5, 'a'}, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ReadFrame(bytes.NewReader(c.data)); !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestValidPath(t *testing.T) {
	good := []string{"a", "a.txt", "dir/sub/file.py", ".hidden", "a..b", "..a"}
	bad := []string{"", "/abs", "..", "../x", "a/../b", "a/./b", "a//b", "a/", "./a", ".", "a\x00b", strings.Repeat("a", 5000)}
	for _, p := range good {
		if err := ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v, want ok", p, err)
		}
	}
	for _, p := range bad {
		if err := ValidPath(p); err == nil {
			t.Errorf("ValidPath(%q) accepted", p)
		}
	}
}

// serve runs a request through Serve on this host (KillStragglers stays off)
// and decodes the frames.
func serve(t *testing.T, req Request) (stages []StageResult, stdout, stderr map[uint8]string, done Done) {
	t.Helper()
	payload, _ := json.Marshal(req)
	var in, out bytes.Buffer
	if err := WriteFrame(&in, Frame{Kind: KindRequest, Payload: payload}); err != nil {
		t.Fatal(err)
	}
	if err := Serve(&in, &out); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	stdout, stderr = map[uint8]string{}, map[uint8]string{}
	for {
		f, err := ReadFrame(&out)
		if err == io.EOF {
			t.Fatal("no Done frame")
		}
		if err != nil {
			t.Fatal(err)
		}
		switch f.Kind {
		case KindStdout:
			stdout[f.Stage] += string(f.Payload)
		case KindStderr:
			stderr[f.Stage] += string(f.Payload)
		case KindStage:
			var r StageResult
			_ = json.Unmarshal(f.Payload, &r)
			stages = append(stages, r)
		case KindDone:
			_ = json.Unmarshal(f.Payload, &done)
			return
		}
	}
}

func TestServeStages(t *testing.T) {
	dir := t.TempDir()
	stages, stdout, stderr, done := serve(t, Request{
		Workdir:     dir,
		OutputLimit: 10,
		Files:       []File{{Path: "sub/in.txt", Data: []byte("from file")}},
		Stages: []Stage{
			{Name: "compile", Argv: []string{"sh", "-c", "cat sub/in.txt; echo warn >&2"}, TimeoutMs: 5000, StopOnFailure: true},
			{Name: "run", Argv: []string{"sh", "-c", "cat; echo 0123456789ABCDEF; exit 4", "x"}, Stdin: []byte("in:"), TimeoutMs: 5000},
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
	stages, _, _, _ := serve(t, Request{Workdir: t.TempDir(), OutputLimit: 100, Stages: []Stage{
		{Name: "compile", Argv: []string{"sh", "-c", "exit 2"}, TimeoutMs: 5000, StopOnFailure: true},
		{Name: "run", Argv: []string{"true"}, TimeoutMs: 5000},
	}})
	if len(stages) != 1 || stages[0].ExitCode != 2 {
		t.Errorf("stages %+v; want only the failed compile", stages)
	}
	stages, stdout, _, _ := serve(t, Request{Workdir: t.TempDir(), OutputLimit: 100, Stages: []Stage{
		{Name: "run", Argv: []string{"sh", "-c", "echo a; sleep 10"}, TimeoutMs: 300},
	}})
	if len(stages) != 1 || !stages[0].TimedOut || stages[0].Signal != "SIGKILL" || stdout[0] != "a\n" {
		t.Errorf("timeout: %+v stdout %q", stages, stdout[0])
	}
	stages, _, _, _ = serve(t, Request{Workdir: t.TempDir(), Stages: []Stage{{Name: "run", Argv: []string{"/no/such/cmd"}, TimeoutMs: 300}}})
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
		stages, _, _, done := serve(t, Request{Workdir: dir, Files: []File{{Path: p, Data: []byte("x")}}, Stages: []Stage{{Name: "run", Argv: []string{"true"}, TimeoutMs: 1000}}})
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
	spec, _ := json.Marshal(Prestart{
		Argv: []string{"sh", "-c", `sleep 0.3; echo "made ${MCR_SECRET:-none} $LANG_EXTRA" > "$1/marker"; exec >/dev/null; sleep 1`, "prestart", dir},
		Env:  []string{"LANG_EXTRA=extra"},
	})
	if err := StartPrestart(string(spec)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { prestarted = nil })
	stages, stdout, _, done := serve(t, Request{Workdir: dir, OutputLimit: 100, Stages: []Stage{
		{Name: "compile", Argv: []string{"cat", "marker"}, TimeoutMs: 5000},
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
		if err := StartPrestart(spec); err == nil || !strings.Contains(err.Error(), PrestartEnv) {
			t.Errorf("StartPrestart(%q) = %v, want an error naming %s", spec, err, PrestartEnv)
		}
	}
	if err := StartPrestart(""); err != nil {
		t.Errorf("no prestart: %v", err)
	}
}

// startWarmIn starts the warm interpreter w in a new directory, made the
// working directory, and returns it; the test forgets the interpreter at
// its end.
func startWarmIn(t *testing.T, w Warm) string {
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

// TestWarmInterpreterRunsTheScriptAsPython starts the warm Python
// interpreter and checks that a run stage handed to it behaves as
// `python3 -u main.py ARGS` would; a stage that does not fit (other
// environment) gets a python3 of its own.
func TestWarmInterpreterRunsTheScriptAsPython(t *testing.T) {
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
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
			dir := startWarmIn(t, Warm{Name: "python", Argv: []string{"python3", "-u", "-c", "{program}"}, Env: env, Replaces: []string{"python3", "-u", "main.py"}})
			stages, stdout, stderr, done := serve(t, Request{Workdir: dir, OutputLimit: 4096,
				Files: []File{{Path: "main.py", Data: []byte(script)}},
				Stages: []Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py", "a b", "c"}, Env: c.env,
					Stdin: []byte("in"), TimeoutMs: 10000}}})
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
	if _, err := exec.LookPath("python3"); err != nil {
		t.Skip("python3 is not installed")
	}
	dir := startWarmIn(t, Warm{Name: "python", Argv: []string{"python3", "-u", "-c", "{program}"}, Replaces: []string{"python3", "-u", "main.py"}})
	stages, _, stderr, _ := serve(t, Request{Workdir: dir, OutputLimit: 4096,
		Files:  []File{{Path: "main.py", Data: []byte("print('ok'\n")}},
		Stages: []Stage{{Name: "run", Argv: []string{"python3", "-u", "main.py"}, TimeoutMs: 10000}}})
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
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
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
			dir := startWarmIn(t, Warm{Name: ScriptWarm, Argv: []string{"bash", "main.sh"}, Env: env, Replaces: []string{"bash", "main.sh"}, Script: "main.sh"})
			warmPID := warm.cmd.Process.Pid
			time.Sleep(1100 * time.Millisecond) // so that $SECONDS would show the wait
			stages, stdout, stderr, done := serve(t, Request{Workdir: dir, OutputLimit: 4096,
				Files:  []File{{Path: "main.sh", Data: []byte(script)}},
				Stages: []Stage{{Name: "run", Argv: c.argv, Env: c.env, Stdin: []byte("in"), TimeoutMs: 10000}}})
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
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash is not installed")
	}
	dir := startWarmIn(t, Warm{Name: ScriptWarm, Argv: []string{"bash", "main.sh"}, Replaces: []string{"bash", "main.sh"}, Script: "main.sh"})
	time.Sleep(100 * time.Millisecond) // until bash opened its FIFO
	if err := warm.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); alive(warm.cmd.Process.Pid) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	stages, stdout, _, done := serve(t, Request{Workdir: dir, OutputLimit: 4096,
		Files:  []File{{Path: "main.sh", Data: []byte("echo fine")}},
		Stages: []Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 10000}}})
	if done.Error != "" || len(stages) != 1 || stages[0].ExitCode != 0 || stdout[0] != "fine\n" {
		t.Errorf("done %+v, stages %+v, stdout %q", done, stages, stdout[0])
	}
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
