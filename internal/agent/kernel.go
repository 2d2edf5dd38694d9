package agent

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
	"golang.org/x/sys/unix"
)

// kernelMark ends each cell's output on stdout and on stderr.
var kernelMark = []byte("\x00\x1eMCR-CELL-END\x1e\x00")

// kernel is a session's long-lived interpreter.
type kernel struct {
	cmd     *exec.Cmd // nil for a fork, whose parent is the interpreter it was forked from
	pid     int       // its process, the leader of its process group
	dir     string    // its workspace
	ctl     *os.File  // the kernel's fd 3: cells go in
	results chan kernelResult
	out     *kstream
	err     *kstream
	exited  chan struct{}
	// env is the environment it was started with; ran, whether it has run
	// any code. A session's interpreter can be started ahead of its first
	// call (a call with no code); that call's environment is then the one
	// it keeps, so an interpreter that ran nothing yet is started again
	// when the first code comes with another environment.
	env []string
	ran bool
}

type kernelResult struct {
	OK       bool    `json:"ok"`
	Value    *string `json:"value"`
	ExitCode int     `json:"exit_code"`
}

// kstream reads one of the kernel's output pipes for its whole life,
// forwarding data to the current cell's sink and signalling each marker.
type kstream struct {
	r      *os.File
	mu     sync.Mutex
	sink   func([]byte)
	marks  chan struct{}
	closed chan struct{}
}

func newKstream(r *os.File) *kstream {
	s := &kstream{r: r, marks: make(chan struct{}, 16), closed: make(chan struct{})}
	go s.loop()
	return s
}

func (s *kstream) setSink(f func([]byte)) {
	s.mu.Lock()
	s.sink = f
	s.mu.Unlock()
}

func (s *kstream) emit(p []byte) {
	if len(p) == 0 {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sink != nil {
		s.sink(p)
	}
}

func (s *kstream) loop() {
	defer close(s.closed)
	buf := make([]byte, chunkBytes)
	var pending []byte
	for {
		n, err := s.r.Read(buf)
		pending = append(pending, buf[:n]...)
		for {
			i := bytes.Index(pending, kernelMark)
			if i < 0 {
				break
			}
			s.emit(pending[:i])
			pending = pending[i+len(kernelMark):]
			select {
			case s.marks <- struct{}{}:
			default:
			}
		}
		// Hold back a tail that may be the start of a marker.
		keep := 0
		for k := min(len(pending), len(kernelMark)-1); k > 0; k-- {
			if bytes.HasPrefix(kernelMark, pending[len(pending)-k:]) {
				keep = k
				break
			}
		}
		s.emit(pending[:len(pending)-keep])
		pending = append([]byte(nil), pending[len(pending)-keep:]...)
		if err != nil {
			s.emit(pending)
			return
		}
	}
}

// startKernel launches the interpreter with the kernel program.
func startKernel(call *wire.KernelCall, workdir string) (*kernel, error) {
	src, err := wire.Program(call.Name)
	if err != nil {
		return nil, fmt.Errorf("no kernel named %q", call.Name)
	}
	f, err := os.CreateTemp("", ".mcr-kernel-*")
	if err != nil {
		return nil, fmt.Errorf("writing the kernel: %w", err)
	}
	if _, err := f.Write(src); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, fmt.Errorf("writing the kernel: %w", err)
	}
	f.Close()
	// The program file lives as long as its interpreter: an agent that
	// runs on a host (tests, local runs) leaves nothing in its temp dir.
	started := false
	defer func() {
		if !started {
			os.Remove(f.Name())
		}
	}()
	argv := make([]string, len(call.Argv))
	for i, a := range call.Argv {
		argv[i] = strings.ReplaceAll(a, "{kernel}", f.Name())
	}
	if len(argv) == 0 {
		return nil, fmt.Errorf("kernel %q has no command", call.Name)
	}
	ctlR, ctlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	resR, resW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = workdir
	cmd.Env = append(baseEnv(), call.Env...)
	cmd.Stdout, cmd.Stderr = outW, errW
	cmd.ExtraFiles = []*os.File{ctlR, resW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	err = startTracked(cmd)
	ctlR.Close()
	resW.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		ctlW.Close()
		resR.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("starting %s: %w", argv[0], err)
	}
	started = true
	k := &kernel{cmd: cmd, pid: cmd.Process.Pid, dir: workdir, ctl: ctlW, results: make(chan kernelResult, 1), out: newKstream(outR), err: newKstream(errR), exited: make(chan struct{}), env: call.Env}
	go k.readResults(resR, nil)
	go func() {
		_ = cmd.Wait()
		untrack(cmd)
		os.Remove(f.Name())
		close(k.exited)
	}()
	return k, nil
}

// readResults reads the kernel's answers, one JSON line each, until the
// kernel closes its end; then it calls ended (a fork's exit: its parent,
// not the agent, waits for it).
func (k *kernel) readResults(r *os.File, ended func()) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var res kernelResult
		if json.Unmarshal(sc.Bytes(), &res) == nil {
			k.results <- res
		}
	}
	r.Close()
	if ended != nil {
		ended()
	}
}

func (k *kernel) kill() {
	_ = syscall.Kill(-k.pid, syscall.SIGKILL)
	k.ctl.Close()
	select {
	case <-k.exited:
	case <-time.After(2 * time.Second):
	}
}

func (a *server) closeKernels() {
	for name, k := range a.kernels {
		k.kill()
		delete(a.kernels, name)
	}
}

// kernelKey names an interpreter of the sandbox: its program and instance.
func kernelKey(call *wire.KernelCall) string { return call.Name + "\x00" + call.Instance }

// runKernel runs one cell in the session's interpreter of that language,
// starting it first when there is none (or the last one died).
func (a *server) runKernel(req wire.Request, cancel <-chan struct{}) error {
	call := req.Kernel
	if call == nil {
		return a.w.json(wire.KindDone, 0, wire.Done{Error: "kernel request without a kernel call"})
	}
	res := wire.StageResult{Name: "run"}
	if err := writeFiles(req.Workdir, req.Files); err != nil {
		return a.w.json(wire.KindDone, 0, wire.Done{Error: err.Error()})
	}
	key := kernelKey(call)
	k, restarted, err := a.kernelFor(key, call, req.Workdir)
	if err != nil {
		res.Error, res.ExitCode = err.Error(), 127
		_ = a.w.json(wire.KindStage, 0, res)
		return a.w.json(wire.KindDone, 0, wire.Done{})
	}
	res.KernelRestarted = restarted
	var before map[string]fileState
	if req.Artifacts != nil {
		before, _ = scan(req.Workdir, req.Artifacts.MaxScan)
	}
	a.sinkOutput(k, req.OutputLimit, &res)
	defer k.out.setSink(nil)
	defer k.err.setSink(nil)

	oomBefore := oomKills()
	start := time.Now()
	k.ran = k.ran || call.Code != ""
	line, _ := json.Marshal(map[string]string{"code": call.Code})
	_, werr := k.ctl.Write(append(line, '\n'))
	lost := true
	if werr != nil {
		res.Error, res.ExitCode = "the interpreter ended; the next call starts a fresh one", 1
	} else {
		lost = awaitCell(k, time.Duration(call.TimeoutMs)*time.Millisecond, cancel, &res)
	}
	res.DurationMs = time.Since(start).Milliseconds()
	if lost {
		k.kill()
		delete(a.kernels, key)
		for _, s := range []*kstream{k.out, k.err} {
			select {
			case <-s.closed:
			case <-time.After(drainGrace):
			}
		}
	}
	if after := oomKills(); after > oomBefore { // also on a timeout, as for stages
		res.OOMKilled = true
	}
	if err := a.w.json(wire.KindStage, 0, res); err != nil {
		return err
	}
	if req.Artifacts != nil {
		collect(a.w, req.Workdir, before, *req.Artifacts)
	}
	return a.w.json(wire.KindDone, 0, wire.Done{})
}

// kernelFor returns the live interpreter of key, or starts one (restarted):
// when none lives, or when the one that does has run nothing yet and the
// call with code brings another environment.
func (a *server) kernelFor(key string, call *wire.KernelCall, workdir string) (k *kernel, restarted bool, err error) {
	k = a.kernels[key]
	if k != nil {
		select {
		case <-k.exited:
			k = nil
		default:
		}
	}
	if k != nil && !k.ran && call.Code != "" && !slices.Equal(k.env, call.Env) {
		k.kill()
		delete(a.kernels, key)
		k = nil
	}
	if k != nil {
		return k, false, nil
	}
	if k, err = startKernel(call, workdir); err != nil {
		return nil, false, err
	}
	a.kernels[key] = k
	return k, true, nil
}

// sinkOutput sends k's stdout and stderr as frames, at most limit bytes of
// each kept, counting what came and what was dropped into res.
func (a *server) sinkOutput(k *kernel, limit int64, res *wire.StageResult) {
	var mu sync.Mutex
	sink := func(kind byte, total, dropped *int64) func([]byte) {
		return func(p []byte) {
			mu.Lock()
			defer mu.Unlock()
			keep := int64(len(p))
			if room := limit - (*total - *dropped); keep > room {
				keep = max(room, 0)
			}
			if keep > 0 {
				_ = a.w.write(wire.Frame{Kind: kind, Stage: 0, Payload: append([]byte(nil), p[:keep]...)})
			}
			*total += int64(len(p))
			*dropped += int64(len(p)) - keep
		}
	}
	k.out.setSink(sink(wire.KindStdout, &res.StdoutBytes, &res.StdoutDropped))
	k.err.setSink(sink(wire.KindStderr, &res.StderrBytes, &res.StderrDropped))
}

// awaitCell waits for the cell sent to k to answer, at most timeout, and
// sets res from the answer, the timeout, the cancel or the interpreter's
// end; it reports whether the interpreter is lost (to be killed).
func awaitCell(k *kernel, timeout time.Duration, cancel <-chan struct{}, res *wire.StageResult) (lost bool) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-k.results:
		res.ExitCode = r.ExitCode
		if r.Value != nil {
			res.Value = *r.Value
		}
		// The markers were written before the answer; wait for the
		// readers to reach them so no output of this cell is left behind.
		for _, s := range []*kstream{k.out, k.err} {
			select {
			case <-s.marks:
			case <-s.closed:
			case <-time.After(2 * time.Second):
			}
		}
		return false
	case <-timer.C:
		res.TimedOut, res.Signal, res.ExitCode = true, "SIGKILL", 137
	case <-cancel:
		res.Cancelled, res.Signal, res.ExitCode = true, "SIGKILL", 137
	case <-k.exited:
		if k.cmd == nil {
			res.ExitCode = 1 // a fork's status goes to its parent
		} else if ps := k.cmd.ProcessState; ps != nil {
			if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				res.Signal = unix.SignalName(ws.Signal())
				res.ExitCode = 128 + int(ws.Signal())
			} else {
				res.ExitCode = ps.ExitCode()
			}
		}
	}
	return true
}
