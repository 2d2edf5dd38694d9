package agent

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
	"golang.org/x/sys/unix"
)

// drainGrace is how long the agent keeps reading a stage's pipes after its
// processes are gone, for output still in the pipe buffers.
const drainGrace = 500 * time.Millisecond

// KillStragglers makes the agent kill every process it may signal after each
// stage, so nothing a stage started outlives it. Only the agent command sets
// it, and only inside a sandbox as a non-root user: on a host it would kill
// the user's own processes.
var KillStragglers bool

// stageProc is a stage's running process: its output pipes and, when the
// stage has input to send, the pipe to write it to.
type stageProc struct {
	cmd        *exec.Cmd
	outR, errR *os.File
	stdinW     *os.File
	// exitReport, for a warm interpreter that can, carries the program's
	// exit code ahead of the interpreter's own teardown ("N\n", sent after
	// it closed its stdout and stderr); nil otherwise.
	exitReport *net.UnixConn
	// readied is closed once the interpreter's readiness signal has been
	// read off exitReport (see warmProc.ready), which the report follows.
	readied <-chan struct{}
}

// startStage starts st's command in workdir with pipes for its output; its
// input is st.Stdin, or /dev/null when that is empty.
func startStage(st wire.Stage, workdir string) (*stageProc, error) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("creating pipe: %v", err)
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		outR.Close()
		outW.Close()
		return nil, fmt.Errorf("creating pipe: %v", err)
	}
	cmd := exec.Command(st.Argv[0], st.Argv[1:]...)
	cmd.Dir = workdir
	cmd.Env = append(baseEnv(), st.Env...)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdinR, stdinW *os.File
	if len(st.Stdin) > 0 {
		if stdinR, stdinW, err = os.Pipe(); err == nil {
			cmd.Stdin = stdinR
		}
	}
	err = startTracked(cmd)
	outW.Close()
	errW.Close()
	if stdinR != nil {
		stdinR.Close()
	}
	if err != nil {
		outR.Close()
		errR.Close()
		if stdinW != nil {
			stdinW.Close()
		}
		return nil, fmt.Errorf("starting %s: %v", st.Argv[0], err)
	}
	return &stageProc{cmd: cmd, outR: outR, errR: errR, stdinW: stdinW}, nil
}

func runStage(fw *frameWriter, idx uint8, st wire.Stage, later []wire.Stage, workdir string, files []wire.File, limit int64, killAll bool, cancel <-chan struct{}) wire.StageResult {
	res := wire.StageResult{Name: st.Name}
	if len(st.Argv) == 0 {
		res.Error, res.ExitCode = "stage has no command", 127
		return res
	}
	oomBefore := oomKills()
	start := time.Now()
	if idx > 0 {
		files = nil // an earlier stage may have changed them
	}
	proc := takeWarm(st, later, workdir, files)
	if proc == nil {
		var err error
		if proc, err = startStage(st, workdir); err != nil {
			res.Error, res.ExitCode = err.Error(), 127
			return res
		}
	}
	cmd, outR, errR := proc.cmd, proc.outR, proc.errR
	wg := startIO(fw, idx, proc, st.Stdin, limit, &res)

	var timedOut sync.Once
	timer := time.AfterFunc(time.Duration(st.TimeoutMs)*time.Millisecond, func() {
		timedOut.Do(func() { res.TimedOut = true })
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	})
	exited := make(chan struct{})
	var cancelled bool
	go func() {
		select {
		case <-cancel:
			timedOut.Do(func() { cancelled = true })
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-exited:
		}
	}()
	reported, usage, waitErr := waitOrReport(proc)
	close(exited)
	timer.Stop()
	res.DurationMs = time.Since(start).Milliseconds()
	timedOut.Do(func() {}) // res.TimedOut and cancelled are settled from here on
	res.Cancelled = cancelled

	// The stage is over when its first process ends. Whatever it left behind
	// (background jobs, setsid or double-forked daemons) is killed: kill(-1)
	// reaches every process this user may signal except init and the agent.
	// While a warm interpreter waits for a later stage of the job (a
	// compiler's stage before the run), only the stage's process group is
	// killed, so that the interpreter lives; the last stage kills all.
	if KillStragglers && killAll && warm == nil {
		_ = syscall.Kill(-1, syscall.SIGKILL)
	} else {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}

	drain(wg, outR, errR)
	setExit(&res, cmd, reported, usage, waitErr)
	// Set even when the stage also timed out: a program whose children the
	// OOM killer took may live on until its timeout, and that is the cause
	// the result should show too.
	if after := oomKills(); after > oomBefore {
		res.OOMKilled = true
	}
	return res
}

// startIO feeds stdin to the stage's process and pumps its stdout and
// stderr into frames, counting them into res; the returned group ends
// when both pumps have.
func startIO(fw *frameWriter, idx uint8, proc *stageProc, stdin []byte, limit int64, res *wire.StageResult) *sync.WaitGroup {
	if stdinW := proc.stdinW; stdinW != nil {
		go func() {
			_, _ = stdinW.Write(stdin) // EPIPE when the program ignores stdin
			stdinW.Close()
		}()
	}
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		res.StdoutBytes, res.StdoutDropped = pump(fw, wire.KindStdout, idx, proc.outR, limit)
	}()
	go func() {
		defer wg.Done()
		res.StderrBytes, res.StderrDropped = pump(fw, wire.KindStderr, idx, proc.errR, limit)
	}()
	return &wg
}

// drain waits for the stage's output pumps (wg) to read what is left in
// the pipes; after drainGrace it ends their reads. Then it closes the
// pipes.
func drain(wg *sync.WaitGroup, outR, errR *os.File) {
	drained := make(chan struct{})
	go func() { wg.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(drainGrace):
		_ = outR.SetReadDeadline(time.Now())
		_ = errR.SetReadDeadline(time.Now())
		<-drained
	}
	outR.Close()
	errR.Close()
}

// setExit sets res's exit code, signal, memory and CPU time: those the
// warm interpreter reported for its program, else the process's own, else
// the error of the wait.
func setExit(res *wire.StageResult, cmd *exec.Cmd, reported bool, usage stageUsage, waitErr error) {
	if reported {
		res.ExitCode, res.MaxRSSKB, res.CPUTimeMs = usage.exitCode, usage.maxRSSKB, usage.cpuTimeMs
	} else if ps := cmd.ProcessState; ps != nil {
		if ru, ok := ps.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSSKB = ru.Maxrss
			res.CPUTimeMs = (time.Duration(ru.Utime.Nano()) + time.Duration(ru.Stime.Nano())).Milliseconds()
		}
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Signal = unix.SignalName(ws.Signal())
			res.ExitCode = 128 + int(ws.Signal())
		} else {
			res.ExitCode = ps.ExitCode()
		}
	} else if waitErr != nil {
		res.Error, res.ExitCode = waitErr.Error(), 127
	}
}

// baseEnv is the environment of every stage: the image's own variables
// (the agent inherits them; MCR_* ones are the sandbox's and dropped), then
// fixed defaults; the stage's variables come after and win.
func baseEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MCR_") {
			env = append(env, kv)
		}
	}
	return append(env,
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/tmp",
		"TMPDIR=/tmp",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
	)
}

// oomKills reads the container's cgroup count of OOM kills (cgroup v2
// memory.events, or v1 memory.oom_control on kernels that report it); -1
// when neither is readable.
func oomKills() int64 {
	f := oomFile()
	if f == nil {
		return -1
	}
	buf := make([]byte, 1024)
	n, err := f.ReadAt(buf, 0)
	if n == 0 && err != nil {
		return -1
	}
	for line := range bytes.SplitSeq(buf[:n], []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("oom_kill ")); ok {
			if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// oomFile is the cgroup file that counts OOM kills, opened once (warmUp
// does it at boot): it is read before and after every stage, and on an idle
// machine each system call of a run's critical path counts. Nil when the
// container has none.
var oomFile = sync.OnceValue(func() *os.File {
	for _, p := range []string{"/sys/fs/cgroup/memory.events", "/sys/fs/cgroup/memory/memory.oom_control"} {
		if f, err := os.Open(p); err == nil {
			return f
		}
	}
	return nil
})
