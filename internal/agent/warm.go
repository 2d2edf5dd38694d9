package agent

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
	"golang.org/x/sys/unix"
)

// warmProc is the started warm interpreter, waiting for its job.
type warmProc struct {
	spec  wire.Warm
	dir   string
	cmd   *exec.Cmd
	stdin *os.File // write end of its standard input
	// The agent's end of fd 3, a socket: the job goes to the interpreter
	// through it, and an interpreter that can report its program's exit
	// before its own teardown (node) reports it back.
	control *net.UnixConn
	outR    *os.File
	errR    *os.File
	// For a script-reading interpreter: the FIFO's path, and its write end
	// once the interpreter has opened it for reading.
	fifo   string
	writer chan *os.File
	opened *os.File
	// For a program given as a file ("{program_file}"): the private
	// directory that holds it until the interpreter has loaded it.
	programDir string
	// handed is set once a stage is handed to the interpreter.
	handed bool
	// ready is closed once the interpreter has loaded and waits for its
	// job: it writes one byte on fd 3 then (or fd 3 ended: it died). Nil
	// for a script-reading interpreter, which has no fd 3.
	ready chan struct{}
}

// warm is the interpreter started at boot, until a stage takes it; nil if
// none.
var warm *warmProc

// StartWarm starts the warm interpreter described by spec (JSON; empty means
// none) in the working directory with the stages' environment, in its own
// process group, its standard streams and fd 3 pipes that the agent holds.
func StartWarm(spec string) error {
	if spec == "" {
		return nil
	}
	var w wire.Warm
	if err := json.Unmarshal([]byte(spec), &w); err != nil || len(w.Argv) == 0 || len(w.Replaces) == 0 {
		return fmt.Errorf("%s is not a warm interpreter (JSON with argv and replaces): %q", wire.WarmEnv, spec)
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("warm interpreter: finding the working directory: %w", err)
	}
	argv, fifo, programDir, err := warmArgv(w, dir, spec)
	if err != nil {
		return err
	}
	var pipes [3][2]*os.File // stdin, stdout, stderr: [read, write]
	var controlTheirs *os.File
	var control *net.UnixConn
	closeAll := func() { // on failure: the pipes, the socket, and the FIFO if made
		for _, p := range pipes {
			for _, f := range p {
				if f != nil {
					f.Close()
				}
			}
		}
		if controlTheirs != nil {
			controlTheirs.Close()
			control.Close()
		}
		if fifo != "" {
			_ = os.Remove(fifo)
		}
		if programDir != "" {
			_ = os.RemoveAll(programDir)
		}
	}
	for i := range pipes {
		r, w, err := os.Pipe()
		if err != nil {
			closeAll()
			return fmt.Errorf("warm interpreter: creating a pipe: %w", err)
		}
		pipes[i] = [2]*os.File{r, w}
	}
	if fifo == "" { // a script interpreter has no control socket
		var err error
		if controlTheirs, control, err = socketPair(); err != nil {
			closeAll()
			return fmt.Errorf("warm interpreter: creating its control socket: %w", err)
		}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	if programDir != "" {
		cmd.Dir = programDir
	}
	cmd.Env = append(baseEnv(), w.Env...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = pipes[0][0], pipes[1][1], pipes[2][1]
	if controlTheirs != nil {
		cmd.ExtraFiles = []*os.File{controlTheirs}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := startTracked(cmd); err != nil {
		closeAll()
		return fmt.Errorf("starting warm interpreter %q: %w", argv[0], err)
	}
	// The child's ends stay with the child only.
	pipes[0][0].Close()
	pipes[1][1].Close()
	pipes[2][1].Close()
	if controlTheirs != nil {
		controlTheirs.Close()
	}
	warm = &warmProc{spec: w, dir: dir, cmd: cmd, stdin: pipes[0][1], control: control, outR: pipes[1][0], errR: pipes[2][0], programDir: programDir}
	warm.watch(fifo)
	return nil
}

// watch notes when the interpreter says it has loaded (a byte on its
// control socket) and, for a script interpreter, opens the FIFO it reads
// its script from once it opens it.
func (w *warmProc) watch(fifo string) {
	if w.control != nil {
		ready := make(chan struct{})
		w.ready = ready
		go func(control *net.UnixConn) {
			defer close(ready)
			var b [1]byte
			_, _ = control.Read(b[:])
		}(w.control)
	}
	if fifo != "" {
		w.fifo = fifo
		w.writer = make(chan *os.File, 1)
		go func(ch chan<- *os.File) {
			defer close(ch)
			// Returns once the interpreter opens the FIFO to read its script.
			if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
				ch <- f
			}
		}(w.writer)
	}
}

// warmArgv is the interpreter's command line from w: a script
// interpreter's reads its script from a FIFO made at w.Script in dir;
// another's gets its built-in program inline ({program}) or as a file in
// a directory of its own ({program_file}). It returns the FIFO and that
// directory, for the caller to remove on failure.
func warmArgv(w wire.Warm, dir, spec string) (argv []string, fifo, programDir string, err error) {
	argv = slices.Clone(w.Argv)
	if w.Name == wire.ScriptWarm {
		if w.Script == "" || wire.ValidPath(w.Script) != nil || !slices.Equal(w.Argv, w.Replaces) {
			return nil, "", "", fmt.Errorf("%s: a script interpreter needs a plain script path and argv equal to replaces: %q", wire.WarmEnv, spec)
		}
		fifo = filepath.Join(dir, w.Script)
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			return nil, "", "", fmt.Errorf("warm interpreter: making the script FIFO: %w", err)
		}
	} else {
		program, err := wire.Program(w.Name)
		if err != nil {
			return nil, "", "", fmt.Errorf("%s names an unknown warm program %q", wire.WarmEnv, w.Name)
		}
		if slices.Contains(argv, "{program_file}") {
			// An interpreter that loads its program from a file gets it
			// in a directory of its own, which the program removes once
			// loaded (and stop removes if it never was). It starts there,
			// not in the workspace, and moves to the workspace when its
			// job comes: an interpreter that looks for files around its
			// working directory as it loads its program (node reads
			// package.json there) must not find the workspace before the
			// job's files are in it, nor remember it without them. A
			// package.json of its own ends node's search there, short of
			// /tmp. The script's path is given absolute, as the
			// interpreter would have resolved it from the workspace.
			if programDir, err = os.MkdirTemp("", ".mcr-warm-"); err != nil {
				return nil, "", "", fmt.Errorf("warm program %s: %w", w.Name, err)
			}
			path := filepath.Join(programDir, w.Name)
			err := os.WriteFile(path, program, 0o400)
			if err == nil {
				err = os.WriteFile(filepath.Join(programDir, "package.json"), []byte("{}\n"), 0o400)
			}
			if err != nil {
				_ = os.RemoveAll(programDir)
				return nil, "", "", fmt.Errorf("warm program %s: %w", w.Name, err)
			}
			for i, a := range argv {
				if a == "{program_file}" {
					argv[i] = path
				}
			}
			if last := len(argv) - 1; !filepath.IsAbs(argv[last]) {
				argv[last] = filepath.Join(dir, argv[last])
			}
		}
		for i, a := range argv {
			argv[i] = strings.ReplaceAll(a, "{program}", string(program))
		}
	}
	return argv, fifo, programDir, nil
}

// warmReadyWait bounds how long the agent waits for the warm interpreter
// to load before it says it is ready ([wire.KindReady]) anyway: a job that
// comes sooner waits for the interpreter as it would have.
const warmReadyWait = 5 * time.Second

// waitWarmReady waits, boundedly, until the warm interpreter (if any) has
// loaded and waits for its job.
func waitWarmReady() {
	if w := warm; w != nil && w.ready != nil {
		select {
		case <-w.ready:
		case <-time.After(warmReadyWait):
		}
	}
}

// scriptReadyWait bounds how long a job waits for the warm interpreter to
// open its script FIFO (it does within milliseconds of the sandbox's start).
const scriptReadyWait = 100 * time.Millisecond

// clearWarmScript runs before a job writes its files: the FIFO must not be
// in the workspace the job sees (nor be written through as its script
// file). Once the interpreter has it open, its name is removed; an
// interpreter that never opened it is stopped.
func clearWarmScript() {
	w := warm
	if w == nil || w.fifo == "" {
		return
	}
	select {
	case w.opened = <-w.writer:
	case <-time.After(scriptReadyWait):
	}
	if w.opened == nil {
		warm = nil
		w.stop()
	}
	_ = os.Remove(w.fifo)
}

// takeWarm hands st to the warm interpreter if it fits: the same command
// prefix, environment and directory, and the interpreter still alive. It
// returns nil when the stage must start its own process. An interpreter
// that does not fit waits for a later stage of the job that it fits (a
// compiled language's run stage, after its compile stage), and is stopped
// when none does.
func takeWarm(st wire.Stage, later []wire.Stage, workdir string, files []wire.File) *stageProc {
	w := warm
	if w == nil {
		return nil
	}
	// An interpreter that died is found out by the write that hands it the
	// job (EPIPE: the pipe has no reader left), which then falls back.
	fits := w.fits(st, workdir)
	if !fits && slices.ContainsFunc(later, func(l wire.Stage) bool { return w.fits(l, workdir) }) {
		return nil
	}
	warm = nil
	if w.fifo != "" {
		return w.takeScript(st, workdir, files, fits)
	}
	if !fits {
		w.stop()
		return nil
	}
	var msg bytes.Buffer
	if w.programDir != "" {
		// Its working directory comes first: it started in its own.
		msg.WriteString(workdir)
		msg.WriteByte(0)
	}
	msg.WriteString(strconv.Itoa(len(w.spec.Replaces) - 1))
	msg.WriteByte(0)
	for _, a := range st.Argv {
		msg.WriteString(a)
		msg.WriteByte(0)
	}
	_, err := w.control.Write(msg.Bytes())
	if err == nil {
		// The end of the job, as the interpreter reads it.
		err = w.control.CloseWrite()
	}
	if err != nil {
		w.stop()
		return nil
	}
	w.handed = true
	return &stageProc{cmd: w.cmd, outR: w.outR, errR: w.errR, stdinW: w.stdin, exitReport: w.control, readied: w.ready}
}

// fits reports whether st is what the interpreter stands for: the same
// command prefix, environment and directory.
func (w *warmProc) fits(st wire.Stage, workdir string) bool {
	return len(st.Argv) >= len(w.spec.Replaces) && slices.Equal(st.Argv[:len(w.spec.Replaces)], w.spec.Replaces) &&
		slices.Equal(st.Env, w.spec.Env) && workdir == w.dir
}

// stopUnusedWarm stops the warm interpreter if no stage took it.
func stopUnusedWarm() {
	if w := warm; w != nil {
		warm = nil
		w.stop()
	}
}

// takeScript hands st to a script-reading interpreter: the script the job
// wrote is streamed into the FIFO the interpreter reads. It fits only a
// stage that is the command alone. The script's first line gets
// "SECONDS=0; " before it, so that $SECONDS counts from the run, not from
// the sandbox's start (line numbers are unchanged).
func (w *warmProc) takeScript(st wire.Stage, workdir string, files []wire.File, fits bool) *stageProc {
	if !fits || len(st.Argv) != len(w.spec.Replaces) || w.opened == nil {
		w.stop()
		return nil
	}
	// The job's own copy of the script when it is what the workspace holds
	// (files is nil after a first stage); else the workspace's.
	var script []byte
	if i := slices.IndexFunc(files, func(f wire.File) bool { return f.Path == w.spec.Script }); i >= 0 {
		script = files[i].Data
	} else {
		var err error
		if script, err = readInRoot(workdir, w.spec.Script); err != nil {
			w.stop()
			return nil
		}
	}
	f := w.opened
	w.opened = nil
	script = append([]byte("SECONDS=0; "), script...)
	if len(script) <= pipeWriteAtOnce {
		// Fits the FIFO's buffer: written at once, the interpreter can go
		// on without this process being scheduled again. If it died since
		// the check above, the stage gets a bash of its own.
		_, err := f.Write(script)
		f.Close()
		if err != nil {
			w.stop()
			return nil
		}
	} else {
		go func() {
			// A longer script is read as it runs; this fails (EPIPE) if
			// the interpreter dies first.
			_, _ = f.Write(script)
			f.Close()
		}()
	}
	return &stageProc{cmd: w.cmd, outR: w.outR, errR: w.errR, stdinW: w.stdin}
}

// pipeWriteAtOnce is the most written into a pipe without waiting for its
// reader: Linux pipes hold 64 KiB unless resized.
const pipeWriteAtOnce = 32 << 10

// readInRoot reads a file of the workspace without following a path out
// of it.
func readInRoot(workdir, name string) ([]byte, error) {
	root, err := os.OpenRoot(workdir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return root.ReadFile(name)
}

// stop kills the interpreter and reaps it in the background.
func (w *warmProc) stop() {
	_ = syscall.Kill(-w.cmd.Process.Pid, syscall.SIGKILL)
	for _, f := range []*os.File{w.stdin, w.outR, w.errR, w.opened} {
		if f != nil {
			f.Close()
		}
	}
	if w.control != nil {
		w.control.Close()
	}
	if w.fifo != "" {
		// A writer still waiting for the interpreter to open the FIFO is
		// released by a reader of our own.
		if r, err := os.OpenFile(w.fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
			r.Close()
		}
		go func() {
			for f := range w.writer {
				f.Close()
			}
		}()
	}
	if w.programDir != "" {
		// Gone already if the interpreter loaded its program; else gone
		// before the stage's own process starts.
		_ = os.RemoveAll(w.programDir)
	}
	go func() {
		_ = w.cmd.Wait()
		untrack(w.cmd)
	}()
}

// socketPair returns the two ends of a connected Unix stream socket: the
// child's, inherited without close-on-exec through ExtraFiles, and the
// agent's, run by Go's poller (so that closing it ends a read in progress).
func socketPair() (theirs *os.File, ours *net.UnixConn, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	theirs = os.NewFile(uintptr(fds[0]), "warm-control")
	f := os.NewFile(uintptr(fds[1]), "warm-control")
	conn, err := net.FileConn(f) // a duplicate of f's descriptor
	f.Close()
	if err != nil {
		theirs.Close()
		return nil, nil, err
	}
	return theirs, conn.(*net.UnixConn), nil
}
