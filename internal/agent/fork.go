package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// forkWait bounds a fork: the interpreter's fork() and the copy's opening
// of its pipes take milliseconds; a full pids limit makes fork() fail at
// once.
const forkWait = 20 * time.Second

// forkKernel copies a session's running interpreter inside the sandbox:
// the interpreter fork()s itself (its memory shared copy-on-write, within
// the sandbox's limits), the copy moves to its own workspace, filled with
// a copy of the original's files, and talks to the agent through pipes of
// its own (FIFOs the agent makes, since the copy is not the agent's child).
// The stage result's value is the copy's process id.
func (a *server) forkKernel(req wire.Request) error {
	fail := func(format string, args ...any) error {
		return a.w.json(wire.KindDone, 0, wire.Done{Error: fmt.Sprintf(format, args...)})
	}
	call, f := req.Kernel, req.Fork
	if call == nil || f == nil || f.Instance == "" || f.Instance == call.Instance || strings.ContainsAny(f.Instance, "/\x00") {
		return fail("a fork request names the interpreter to fork and a new instance for the copy")
	}
	parent := a.kernels[kernelKey(call)]
	if parent != nil {
		select {
		case <-parent.exited:
			parent = nil
		default:
		}
	}
	if parent == nil {
		return fail("%s", wire.ErrNoKernel)
	}
	childCall := *call
	childCall.Instance = f.Instance
	if a.kernels[kernelKey(&childCall)] != nil {
		return fail("an interpreter %q runs already", f.Instance)
	}
	copied, err := copyWorkspace(parent.dir, req.Workdir)
	if err != nil {
		return fail("copying the workspace for the fork: %v", err)
	}
	child, err := a.forkFrom(parent, req.Workdir)
	if err != nil {
		_ = os.RemoveAll(req.Workdir)
		return fail("forking the interpreter: %v", err)
	}
	child.env = parent.env
	a.kernels[kernelKey(&childCall)] = child
	res := wire.StageResult{Name: "fork", Value: strconv.Itoa(child.pid)}
	res.StdoutBytes = int64(copied) // the files copied, for the fork's result
	if err := a.w.json(wire.KindStage, 0, res); err != nil {
		return err
	}
	return a.w.json(wire.KindDone, 0, wire.Done{})
}

// forkPipes are the FIFOs a fork's copy opens as its control, result,
// stdout and stderr streams.
var forkPipes = []string{"ctl", "res", "out", "err"}

// makeForkPipes makes forkPipes in a new temporary directory and returns
// it (to be removed, once opened, by the caller) and each FIFO's path.
func makeForkPipes() (string, map[string]string, error) {
	fifos, err := os.MkdirTemp("", ".mcr-fork-")
	if err != nil {
		return "", nil, err
	}
	paths := map[string]string{}
	for _, n := range forkPipes {
		paths[n] = filepath.Join(fifos, n)
		if err := syscall.Mkfifo(paths[n], 0o600); err != nil {
			return fifos, nil, err
		}
	}
	return fifos, paths, nil
}

// openedPipe is one of forkPipes opened, or why it was not.
type openedPipe struct {
	name string
	f    *os.File
	err  error
}

// openForkPipes opens each of forkPipes, the control one for writing, and
// sends each as it opens: an open waits for the copy to open the other
// end.
func openForkPipes(paths map[string]string) chan openedPipe {
	got := make(chan openedPipe, len(forkPipes))
	for _, n := range forkPipes {
		flag := os.O_RDONLY
		if n == "ctl" {
			flag = os.O_WRONLY
		}
		go func() {
			f, err := os.OpenFile(paths[n], flag, 0)
			got <- openedPipe{n, f, err}
		}()
	}
	return got
}

// forkFrom asks parent to fork and connects to the copy.
func (a *server) forkFrom(parent *kernel, dir string) (*kernel, error) {
	fifos, paths, err := makeForkPipes()
	if fifos != "" {
		defer os.RemoveAll(fifos) // the open pipes outlive their names
	}
	if err != nil {
		return nil, err
	}
	names := forkPipes
	got := openForkPipes(paths)
	msg, _ := json.Marshal(map[string]any{"code": "", "fork": map[string]string{
		"ctl": paths["ctl"], "res": paths["res"], "out": paths["out"], "err": paths["err"], "dir": dir}})
	files := map[string]*os.File{}
	cleanup := func() {
		// An open still waiting returns once the other end is opened:
		// open it here, then close what they return.
		for _, n := range names {
			if files[n] == nil {
				if f, err := os.OpenFile(paths[n], os.O_RDWR, 0); err == nil {
					defer f.Close()
				}
			}
		}
		for _, f := range files {
			f.Close()
		}
		for range len(names) - len(files) {
			if o := <-got; o.f != nil {
				o.f.Close()
			}
		}
	}
	if _, err := parent.ctl.Write(append(msg, '\n')); err != nil {
		cleanup()
		return nil, fmt.Errorf("the interpreter ended: %v", err)
	}
	timeout := time.NewTimer(forkWait)
	defer timeout.Stop()
	var pid int
	for pid == 0 || len(files) < len(names) {
		select {
		case o := <-got:
			if o.err != nil {
				cleanup()
				return nil, o.err
			}
			files[o.name] = o.f
		case r := <-parent.results:
			if r.Value == nil || !r.OK {
				cleanup()
				return nil, errors.New("the interpreter could not fork (a full pids limit, or no memory)")
			}
			if pid, err = strconv.Atoi(*r.Value); err != nil || pid <= 0 {
				cleanup()
				return nil, fmt.Errorf("the interpreter answered %q", *r.Value)
			}
		case <-parent.exited:
			cleanup()
			return nil, errors.New("the interpreter ended")
		case <-timeout.C:
			cleanup()
			return nil, fmt.Errorf("no copy within %s", forkWait)
		}
	}
	k := &kernel{pid: pid, dir: dir, ctl: files["ctl"], results: make(chan kernelResult, 1),
		out: newKstream(files["out"]), err: newKstream(files["err"]), exited: make(chan struct{}), ran: true}
	go k.readResults(files["res"], func() { close(k.exited) })
	return k, nil
}

// closeKernel ends one interpreter of the sandbox and removes its
// workspace when it is a fork's.
func (a *server) closeKernel(req wire.Request) error {
	if req.Kernel == nil {
		return a.w.json(wire.KindDone, 0, wire.Done{Error: "a kernel_close request names the interpreter"})
	}
	key := kernelKey(req.Kernel)
	if k := a.kernels[key]; k != nil {
		k.kill()
		delete(a.kernels, key)
	}
	done := wire.Done{}
	if filepath.Base(filepath.Dir(req.Workdir)) == wire.ForksDir {
		if err := os.RemoveAll(req.Workdir); err != nil {
			done.Error = err.Error()
		}
	}
	return a.w.json(wire.KindDone, 0, done)
}

// copyWorkspace copies the regular files, directories and symbolic links
// of src into dst (made), but the forks' own workspaces, and counts the
// regular files.
func copyWorkspace(src, dst string) (files int, err error) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return 0, err
	}
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if rel == "." {
			return nil
		}
		if d.IsDir() && rel == wire.ForksDir {
			return filepath.SkipDir
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case info.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case info.Mode().IsRegular():
			files++
			return copyFile(p, target, info.Mode().Perm())
		}
		return nil // sockets, pipes, devices: not copied
	})
	return files, err
}

func copyFile(src, dst string, perm fs.FileMode) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
