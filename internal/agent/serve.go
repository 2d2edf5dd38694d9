// Package agent is the program inside every sandbox. It becomes the
// sandbox's init, serves the server's requests over the wire protocol (the
// request loop is Serve), writes and reads the workspace's files, runs each
// stage's process under its time limit, streams the output back as frames
// and collects the artifacts.
package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/entry"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Serve reads Requests from in until it ends, runs each in turn and writes
// the response frames to out; a Ready frame it reads is answered with one
// once the sandbox is ready for a job. A one-shot sandbox sends one request and
// closes its side; a session sends many. A Cancel frame stops the request
// running at the time.
//
// A request runs on the goroutine that read it, and a watcher reads the
// frames that come while it runs: handing the request to another goroutine
// would wait for that goroutine to be scheduled, which on an idle machine
// costs as much as the run's own setup.
func Serve(in io.Reader, out io.Writer) error {
	a := newServer()
	defer a.closeKernels()
	served, err := a.serveConn(in, out, false)
	if err == io.EOF && served == 0 {
		return errors.New("reading request: no request before the end of input")
	}
	if err == io.EOF {
		return nil
	}
	return err
}

func newServer() *server { return &server{kernels: map[string]*kernel{}} }

// serveConn serves the requests of one connection to the server until it
// ends: it returns io.EOF when the input ended between requests, or why it
// stopped, and how many requests it served. With endCancels, the input's
// end (the server went away) cancels the request running then: nobody is
// left to read its result. A one-shot sandbox's server ends its input
// right after its one request, so there the end cancels nothing.
func (a *server) serveConn(in io.Reader, out io.Writer, endCancels bool) (served int, err error) {
	// The watcher's goroutine answers Ready frames through w, not a.w: it
	// may outlive this connection while the next one's writer takes a.w.
	w := &frameWriter{w: out}
	a.w = w
	// Buffered, so that a frame's header and payload come in one read.
	r := bufio.NewReaderSize(in, 64<<10)
	next := func() (wire.Frame, error) {
		for {
			f, err := wire.ReadFrame(r)
			switch {
			case err != nil:
				if endCancels {
					a.cancelCurrent()
				}
				return f, err
			case f.Kind == wire.KindCancel:
				a.cancelCurrent()
			case f.Kind == wire.KindToolResult:
				a.deliverTool(f.Payload)
			case f.Kind == wire.KindReady:
				// Answered once what the sandbox started ahead of the
				// job can take it: the host counts the sandbox idle
				// from then on.
				waitWarmReady()
				waitPrestart()
				if err := w.write(wire.Frame{Kind: wire.KindReady}); err != nil {
					return wire.Frame{}, fmt.Errorf("answering ready: %w", err)
				}
			default:
				return f, nil
			}
		}
	}
	f, err := next()
	for err == nil {
		if f.Kind != wire.KindRequest {
			return served, fmt.Errorf("%w: expected a request, got kind %q", wire.ErrBadFrame, f.Kind)
		}
		var req wire.Request
		if err := json.Unmarshal(f.Payload, &req); err != nil {
			return served, fmt.Errorf("decoding request: %w", err)
		}
		cancel := a.begin()
		following := make(chan readResult, 1)
		go func() {
			f, err := next()
			following <- readResult{f, err}
		}()
		if err := a.handle(req, cancel); err != nil {
			return served, err
		}
		served++
		if a.checkpointed {
			return served, errCheckpoint
		}
		rr := <-following
		f, err = rr.f, rr.err
	}
	if err != io.EOF {
		err = fmt.Errorf("reading request: %w", err)
	}
	return served, err
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
	// checkpointed says the connection ended for a checkpoint
	// (checkpoint_linux.go): the next one lets the sandbox go on.
	checkpointed bool
	// checkpoints counts the checkpoints the agent was readied for: one
	// after the first was restored.
	checkpoints int
	// reconnecting says the agent waits for its server when a connection
	// ends (ServeReconnecting): only then can the sandbox be checkpointed.
	reconnecting bool
	// tools serves the tool calls of requests given tools (tools.go),
	// from the first such request on.
	tools *tools
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
	if req.Tools != nil {
		defer a.endTools()
		if err := a.equipTools(&req); err != nil {
			return a.w.json(wire.KindDone, 0, wire.Done{Error: err.Error()})
		}
	}
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
	case wire.OpKernelFork:
		return a.forkKernel(req)
	case wire.OpKernelClose:
		return a.closeKernel(req)
	case wire.OpCheckpoint:
		return a.readyForCheckpoint()
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
	if len(req.Architectures) > 0 && len(req.Stages) > 0 && !slices.Contains(req.Architectures, runtime.GOARCH) {
		return refuseFirstStage(w, req, 2, req.ArchitectureRefusal+" (this sandbox is linux/"+runtime.GOARCH+")")
	}
	if req.Entry != "" && len(req.Files) > 0 && len(req.Stages) > 0 {
		if err := applyEntry(&req); err != nil {
			return refuseFirstStage(w, req, 1, err.Error())
		}
	}
	if err := writeFiles(req.Workdir, req.Files); err != nil {
		done.Error = err.Error()
		return w.json(wire.KindDone, 0, done)
	}
	var before map[string]fileState
	if req.Artifacts != nil {
		before, _ = scan(req.Workdir, req.Artifacts.MaxScan)
	}
	// A warm interpreter no stage of the job took goes with the job: no
	// later job may find it, started before this one ran.
	defer stopUnusedWarm()
	for i, st := range req.Stages {
		res := runStage(w, uint8(i), st, req.Stages[i+1:], req.Workdir, req.Files, req.OutputLimit, !req.Session, cancel)
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

// applyEntry applies the request's entry-point convention to its code: the
// code's file name, and the stages' commands with {file}, {main} and {form}
// filled.
func applyEntry(req *wire.Request) error {
	code := req.Files[0]
	p, err := entry.Find(req.Entry, code.Path, code.Data)
	if err != nil {
		return err
	}
	for _, f := range req.Files[1:] {
		if f.Path == p.File {
			return fmt.Errorf("the code must be saved as %s, which the request's files also give; leave that file out or rename it", p.File)
		}
	}
	req.Files = append([]wire.File{{Path: p.File, Data: p.Source, Mode: code.Mode}}, req.Files[1:]...)
	for i := range req.Stages {
		req.Stages[i].Argv = entry.Fill(req.Stages[i].Argv, p)
	}
	return nil
}

// refuseFirstStage answers a request that cannot run here (its code has no
// entry point it can run, or its language does not run on this machine's
// architecture): its first stage (the compile stage of a compiled
// language) fails with exitCode and why on its stderr, and no stage runs.
func refuseFirstStage(w *frameWriter, req wire.Request, exitCode int, why string) error {
	msg := []byte("error: " + why + "\n")
	w.hold()
	_ = w.write(wire.Frame{Kind: wire.KindStderr, Stage: 0, Payload: msg})
	if err := w.json(wire.KindStage, 0, wire.StageResult{Name: req.Stages[0].Name, ExitCode: exitCode, StderrBytes: int64(len(msg))}); err != nil {
		return err
	}
	return w.json(wire.KindDone, 0, wire.Done{})
}
