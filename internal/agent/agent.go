package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
	"golang.org/x/sys/unix"
)

// chunkBytes is the largest output chunk forwarded in one frame.
const chunkBytes = 32 << 10

// drainGrace is how long the agent keeps reading a stage's pipes after its
// processes are gone, for output still in the pipe buffers.
const drainGrace = 500 * time.Millisecond

// KillStragglers makes the agent kill every process it may signal after each
// stage, so nothing a stage started outlives it. Only the agent command sets
// it, and only inside a sandbox as a non-root user: on a host it would kill
// the user's own processes.
var KillStragglers bool

// Serve reads Requests from in until it ends, runs each in turn and writes
// the response frames to out. A one-shot sandbox sends one request and
// closes its side; a session sends many. A Cancel frame stops the request
// running at the time.
//
// A request runs on the goroutine that read it, and a watcher reads the
// frames that come while it runs: handing the request to another goroutine
// would wait for that goroutine to be scheduled, which on an idle machine
// costs as much as the run's own setup.
func Serve(in io.Reader, out io.Writer) error {
	a := &server{w: &frameWriter{w: out}, kernels: map[string]*kernel{}}
	defer a.closeKernels()
	// Buffered, so that a frame's header and payload come in one read.
	r := bufio.NewReaderSize(in, 64<<10)
	next := func() (wire.Frame, error) {
		for {
			f, err := wire.ReadFrame(r)
			if err != nil || f.Kind != wire.KindCancel {
				return f, err
			}
			a.cancelCurrent()
		}
	}
	served := 0
	f, err := next()
	for err == nil {
		if f.Kind != wire.KindRequest {
			return fmt.Errorf("%w: expected a request, got kind %q", wire.ErrBadFrame, f.Kind)
		}
		var req wire.Request
		if err := json.Unmarshal(f.Payload, &req); err != nil {
			return fmt.Errorf("decoding request: %w", err)
		}
		cancel := a.begin()
		following := make(chan readResult, 1)
		go func() {
			f, err := next()
			following <- readResult{f, err}
		}()
		if err := a.handle(req, cancel); err != nil {
			return err
		}
		served++
		rr := <-following
		f, err = rr.f, rr.err
	}
	if err != io.EOF || served == 0 {
		if err == io.EOF {
			return errors.New("reading request: no request before the end of input")
		}
		return fmt.Errorf("reading request: %w", err)
	}
	return nil
}

// readResult is a frame read, or why none could be.
type readResult struct {
	f   wire.Frame
	err error
}

// server is the agent's state across the requests of one sandbox.
type server struct {
	w       *frameWriter
	mu      sync.Mutex
	cancel  chan struct{} // closed to stop the request running now
	kernels map[string]*kernel
}

func (a *server) cancelCurrent() {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.cancel != nil {
		close(a.cancel)
		a.cancel = nil
	}
}

func (a *server) begin() <-chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel = make(chan struct{})
	return a.cancel
}

func (a *server) end() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.cancel = nil
}

// handle runs req; cancel is closed when a Cancel frame asks to stop it.
func (a *server) handle(req wire.Request, cancel <-chan struct{}) error {
	defer a.end()
	switch req.Op {
	case wire.OpRun:
		waitPrestart()
		return runRequest(a.w, req, cancel)
	case wire.OpWriteFile:
		done := wire.Done{}
		if err := writeFiles(req.Workdir, req.Files); err != nil {
			done.Error = err.Error()
		}
		return a.w.json(wire.KindDone, 0, done)
	case wire.OpReadFile:
		return a.w.json(wire.KindDone, 0, readFile(a.w, req))
	case wire.OpListFiles:
		return a.w.json(wire.KindDone, 0, listFiles(a.w, req))
	case wire.OpKernel:
		return a.runKernel(req, cancel)
	default:
		return a.w.json(wire.KindDone, 0, wire.Done{Error: fmt.Sprintf("unknown operation %q", req.Op)})
	}
}

// runRequest writes the files, runs the stages, collects the artifacts and
// ends with the Done frame.
func runRequest(w *frameWriter, req wire.Request, cancel <-chan struct{}) (err error) {
	defer func() {
		if ferr := w.flush(); err == nil {
			err = ferr
		}
	}()
	done := wire.Done{}
	clearWarmScript()
	if err := writeFiles(req.Workdir, req.Files); err != nil {
		done.Error = err.Error()
		return w.json(wire.KindDone, 0, done)
	}
	var before map[string]fileState
	if req.Artifacts != nil {
		before, _ = scan(req.Workdir, req.Artifacts.MaxScan)
	}
	for i, st := range req.Stages {
		res := runStage(w, uint8(i), st, req.Workdir, req.Files, req.OutputLimit, !req.Session, cancel)
		last := i == len(req.Stages)-1 || res.Cancelled || st.StopOnFailure && (res.ExitCode != 0 || res.Error != "")
		if last {
			// The last stage's result, the artifacts and Done go out
			// together: the host needs them all before it can answer.
			w.hold()
		}
		if err := w.json(wire.KindStage, uint8(i), res); err != nil {
			return err
		}
		if last {
			break
		}
	}
	if req.Artifacts != nil {
		collect(w, req.Workdir, before, *req.Artifacts)
	}
	if err := w.err(); err != nil {
		return err
	}
	return w.json(wire.KindDone, 0, done)
}

// writeFiles writes files under workdir through an os.Root, so that no path
// can escape it even through a symlink.
func writeFiles(workdir string, files []wire.File) error {
	if len(files) == 0 {
		return nil
	}
	root, release, err := openWorkspace(workdir)
	if err != nil {
		return fmt.Errorf("opening workspace: %w", err)
	}
	defer release()
	for _, f := range files {
		if err := wire.ValidPath(f.Path); err != nil {
			return err
		}
		if dir := path.Dir(f.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating directory for %s: %w", f.Path, err)
			}
		}
		mode := os.FileMode(f.Mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		fh, err := root.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		_, werr := fh.Write(f.Data)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return fmt.Errorf("writing %s: %w (is the workspace full?)", f.Path, err)
		}
	}
	return nil
}

// bootWorkspace is the sandbox's workspace, opened at boot by warmUp and
// kept open: each system call on a run's critical path counts.
var bootWorkspace struct {
	dir  string
	root *os.Root
}

// openWorkspace returns an os.Root for dir, the one opened at boot when it
// is that directory, and what to call when done with it.
func openWorkspace(dir string) (*os.Root, func(), error) {
	if r := bootWorkspace.root; r != nil && dir == bootWorkspace.dir {
		return r, func() {}, nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { _ = r.Close() }, nil
}

// frameWriter serializes frames from the stage's output readers.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	failed error
	// held collects frames while holding, to be written at once by flush.
	holding bool
	held    []byte
}

// heldBytes is the most frames held back before they are written anyway.
const heldBytes = 64 << 10

func (fw *frameWriter) write(f wire.Frame) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.failed != nil {
		return fw.failed
	}
	if fw.holding {
		if len(f.Payload) > wire.MaxFrameBytes {
			fw.failed = fmt.Errorf("frame payload of %d bytes exceeds %d", len(f.Payload), wire.MaxFrameBytes)
			return fw.failed
		}
		fw.held = wire.AppendFrame(fw.held, f)
		if len(fw.held) >= heldBytes {
			fw.writeHeld()
		}
		return fw.failed
	}
	fw.failed = wire.WriteFrame(fw.w, f)
	return fw.failed
}

// hold makes the frames that follow wait for flush, so that they leave in
// one write.
func (fw *frameWriter) hold() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.holding = true
}

// flush writes the frames held and stops holding.
func (fw *frameWriter) flush() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.holding = false
	if fw.failed == nil {
		fw.writeHeld()
	}
	return fw.failed
}

func (fw *frameWriter) writeHeld() {
	if len(fw.held) > 0 {
		_, fw.failed = fw.w.Write(fw.held)
		fw.held = fw.held[:0]
		if cap(fw.held) > 2*heldBytes {
			fw.held = nil // an artifact's worth of memory is not kept for later
		}
	}
}

func (fw *frameWriter) json(kind byte, stage uint8, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fw.write(wire.Frame{Kind: kind, Stage: stage, Payload: b})
}

func (fw *frameWriter) err() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.failed
}

// pump forwards r as frames of kind until EOF, forwarding at most limit
// bytes and counting the rest. It returns total bytes and dropped bytes.
func pump(fw *frameWriter, kind byte, stage uint8, r io.Reader, limit int64) (total, dropped int64) {
	buf := make([]byte, chunkBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			keep := int64(n)
			if room := limit - (total - dropped); keep > room {
				keep = max(room, 0)
			}
			if keep > 0 {
				_ = fw.write(wire.Frame{Kind: kind, Stage: stage, Payload: buf[:keep]})
			}
			total += int64(n)
			dropped += int64(n) - keep
		}
		if err != nil {
			return total, dropped
		}
	}
}

// stageProc is a stage's running process: its output pipes and, when the
// stage has input to send, the pipe to write it to.
type stageProc struct {
	cmd        *exec.Cmd
	outR, errR *os.File
	stdinW     *os.File
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

func runStage(fw *frameWriter, idx uint8, st wire.Stage, workdir string, files []wire.File, limit int64, killAll bool, cancel <-chan struct{}) wire.StageResult {
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
	proc := takeWarm(st, workdir, files)
	if proc == nil {
		var err error
		if proc, err = startStage(st, workdir); err != nil {
			res.Error, res.ExitCode = err.Error(), 127
			return res
		}
	}
	cmd, outR, errR := proc.cmd, proc.outR, proc.errR
	if stdinW := proc.stdinW; stdinW != nil {
		go func() {
			_, _ = stdinW.Write(st.Stdin) // EPIPE when the program ignores stdin
			stdinW.Close()
		}()
	}

	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		res.StdoutBytes, res.StdoutDropped = pump(fw, wire.KindStdout, idx, outR, limit)
	}()
	go func() {
		defer wg.Done()
		res.StderrBytes, res.StderrDropped = pump(fw, wire.KindStderr, idx, errR, limit)
	}()

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
	waitErr := cmd.Wait()
	untrack(cmd)
	close(exited)
	timer.Stop()
	res.DurationMs = time.Since(start).Milliseconds()
	timedOut.Do(func() {}) // res.TimedOut and cancelled are settled from here on
	res.Cancelled = cancelled

	// The stage is over when its first process ends. Whatever it left behind
	// (background jobs, setsid or double-forked daemons) is killed: kill(-1)
	// reaches every process this user may signal except init and the agent.
	if KillStragglers && killAll {
		_ = syscall.Kill(-1, syscall.SIGKILL)
	} else {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}

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

	if ps := cmd.ProcessState; ps != nil {
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
	// Set even when the stage also timed out: a program whose children the
	// OOM killer took may live on until its timeout, and that is the cause
	// the result should show too.
	if after := oomKills(); after > oomBefore {
		res.OOMKilled = true
	}
	return res
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
	for _, line := range bytes.Split(buf[:n], []byte("\n")) {
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
