//go:build !fast

package containment_test

import (
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Regression tests for four weaknesses the battery found and that are now
// fixed (docs/SECURITY.md tells each story). Issues 1 and 2 shared a cause:
// the agent and a separate init ran as the program's uid and were dumpable,
// so the program could open the container's stdout through /proc/PID/fd/1,
// or ptrace them, and speak the agent's frame protocol to the server. The
// agent is now PID 1 and not dumpable, and the server bounds what it keeps
// of any frame stream whatever the sandbox sends. A fifth, signals sent to
// the agent from inside the sandbox, is covered by TestAgentSurvivesSignals
// (resources_test.go).

// TestForgedFramesCannotExhaustServerMemory attacks the server through the
// container's attached stdout, the stream the agent's frames travel on.
//
// From the program: the container's stdout is the agent's, reachable only
// through /proc/1/fd/1; opening it must fail. Should it succeed, the program
// writes 320 MiB of "stdout" in 16 MiB frames, bypassing the agent's output
// cap, and the server's own bound must still hold.
//
// From a subverted agent: the test writes the same 320 MiB of frames to the
// container's stdout from the host (as root, through the agent's
// /proc/PID/fd/1; under gVisor, whose agent lives in the Sentry's memory,
// from a process runsc exec runs in the sandbox as root, through
// /proc/1/fd/1), as a compromised agent could. The server must keep at
// most max_output_bytes of it, its heap must stay within budget, and the run
// must still end clearly.
func TestForgedFramesCannotExhaustServerMemory(t *testing.T) {
	const frames, frameSize = 20, 16 << 20 // under the server's 24 MiB frame limit
	t.Run("from the program", func(t *testing.T) {
		h := newHarness(t, "python")
		code := `import errno, os, struct, time
try:
    fd = os.open('/proc/1/fd/1', os.O_WRONLY)
except OSError as e:
    print("ok container-stdout:", errno.errorcode.get(e.errno, e.errno), flush=True)
else:
    chunk = b'A' * (16 << 20)
    frame = b'O' + bytes([0]) + struct.pack('>I', len(chunk)) + chunk
    for i in range(20):
        os.write(fd, frame)
    print("BREACH container-stdout: wrote 320 MiB of forged frames", flush=True)
time.sleep(1)`
		w := watchHeap()
		r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 60*time.Second)
		w.check(t, heapBudget)
		probeReport(t, r, "container-stdout")
		checkKeptOutput(t, h, r, w)
	})
	t.Run("from a subverted agent", func(t *testing.T) {
		requireHostAccess(t)
		h := newHarness(t, "bash")
		// The program announces itself, then waits, quiet, so that nothing
		// the agent sends interleaves with the forged frames, until the test
		// has written them and drops a file in its workspace.
		code := `echo READY
while [ ! -e /workspace/.go ]; do sleep 0.05; done
echo DONE`
		injected := make(chan error, 1)
		var wrote atomic.Int64
		var gv *crunView
		if testbackend.OnGVisor() {
			gv = gvisorView(t, h.view)
		}
		inject := func() {
			id, pid, err := sandboxOnHost(h.view)
			if err != nil {
				injected <- err
				return
			}
			defer func() {
				// Let the program finish, whatever happened.
				if gv != nil {
					_, _ = gv.inGVisor(context.Background(), id, "touch", "/workspace/.go")
					return
				}
				_ = os.WriteFile(fmt.Sprintf("/proc/%d/root/workspace/.go", pid), nil, 0o644)
			}()
			var f io.WriteCloser
			if gv != nil {
				// Under gVisor the agent is gVisor's PID 1, in the Sentry's
				// memory: its channel is opened inside the sandbox.
				f, err = gv.gvisorAgentStdout(id)
			} else {
				f, err = agentChannel(pid)
			}
			if err != nil {
				injected <- err
				return
			}
			defer f.Close()
			// Written in 1 MiB pieces from one buffer, so that the test's
			// own allocations stay out of the server's heap budget.
			piece := make([]byte, 1<<20)
			for i := range piece {
				piece[i] = 'A'
			}
			var hdr [6]byte
			hdr[0] = wire.KindStdout
			binary.BigEndian.PutUint32(hdr[2:], frameSize)
			for range frames {
				if _, err := f.Write(hdr[:]); err != nil {
					injected <- err
					return
				}
				for n := 0; n < frameSize; n += len(piece) {
					if _, err := f.Write(piece); err != nil {
						injected <- err
						return
					}
					wrote.Add(int64(len(piece)))
				}
			}
			injected <- nil
		}
		w := watchHeap()
		start := time.Now()
		r := h.runWith(engine.Request{Code: code, TimeoutSeconds: 30}, 60*time.Second,
			engine.RunOptions{OnChunk: onLine("READY", func() { go inject() })})
		w.check(t, heapBudget)
		var err error
		select {
		case err = <-injected:
		default:
			t.Fatalf("the run ended before the forged frames were written")
		}
		skipIfNoHostView(t, err)
		t.Logf("forged %d MiB of stdout frames into the stream from the host in %s", wrote.Load()>>20, time.Since(start).Round(time.Millisecond))
		if r.Status != engine.StatusOK || !strings.HasPrefix(r.Stdout, "READY\nAAAA") {
			t.Errorf("want the run to end normally with the forged output kept up to the limit, got status %s stdout %q", r.Status, tail(r.Stdout, 100))
		}
		full, ok := h.e.Outputs().Get(r.StdoutURI, principal.LocalName)
		if !ok || len(full) != h.cfg.Limits.MaxOutputBytes {
			t.Errorf("kept stdout: %d bytes (found %v); want exactly max_output_bytes (%d): the forged frames reached the server and were cut there",
				len(full), ok, h.cfg.Limits.MaxOutputBytes)
		}
		checkKeptOutput(t, h, r, w)
	})
}

// checkKeptOutput checks that the server kept at most max_output_bytes of
// the run's stdout, and that its heap is back within budget after a GC
// (the output store keeps results for an hour).
func checkKeptOutput(t *testing.T, h *harness, r *engine.Result, w *heapWatch) {
	t.Helper()
	if full, ok := h.e.Outputs().Get(r.StdoutURI, principal.LocalName); ok && len(full) > h.cfg.Limits.MaxOutputBytes {
		t.Errorf("the server kept %d bytes of stdout, over max_output_bytes (%d)", len(full), h.cfg.Limits.MaxOutputBytes)
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t.Logf("server heap in use after the run and a GC: %d MiB", m.HeapInuse>>20)
	if m.HeapInuse > w.base+heapBudget {
		t.Errorf("the server still holds %d MiB after the run", m.HeapInuse>>20)
	}
}

// TestAgentIsOutOfReach checks that the program cannot reach the process
// that reports its result, the agent (PID 1 since it replaced docker-init;
// the probe finds it by its command line wherever it runs): it must not be
// able to open the container's stdio through /proc/1/fd or the agent's
// /proc/PID/fd, read the agent's memory or environment, make the agent the
// OOM killer's first choice, or ptrace the agent or PID 1.
func TestAgentIsOutOfReach(t *testing.T) {
	h := newHarness(t, "python")
	code := `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
def cmdline(p):
    try:
        return open('/proc/%s/cmdline' % p, 'rb').read()
    except OSError:
        return b''
agent = [p for p in os.listdir('/proc') if p.isdigit()
         and cmdline(p).startswith(b'/opt/mcp-code-runner/agent')][0]
def attempt(name, f):
    try:
        f()
        print("BREACH", name + ":", "succeeded")
    except OSError as e:
        print("ok", name + ":", errno.errorcode.get(e.errno, e.errno))
def ptrace(pid):
    # PTRACE_SEIZE attaches without stopping the tracee; the attachment ends
    # when this process exits.
    def f():
        if libc.ptrace(0x4206, int(pid), None, None) != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
    return f
def write(path, data):
    def f():
        with open(path, 'w') as fh:
            fh.write(data)
    return f
print("info agent-pid:", agent)
attempt("init-stdin", lambda: os.close(os.open('/proc/1/fd/0', os.O_RDONLY)))
attempt("init-stdout", lambda: os.close(os.open('/proc/1/fd/1', os.O_WRONLY)))
attempt("init-stderr", lambda: os.close(os.open('/proc/1/fd/2', os.O_WRONLY)))
attempt("agent-stdout", lambda: os.close(os.open('/proc/%s/fd/1' % agent, os.O_WRONLY)))
attempt("agent-mem", lambda: open('/proc/%s/mem' % agent, 'rb').close())
attempt("agent-environ", lambda: open('/proc/%s/environ' % agent, 'rb').read())
attempt("agent-oom-adj", write('/proc/%s/oom_score_adj' % agent, '1000'))
attempt("ptrace-agent", ptrace(agent))
attempt("ptrace-init", ptrace(1))`
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	probeReport(t, r, "init-stdin", "init-stdout", "init-stderr", "agent-stdout", "agent-mem", "agent-environ", "agent-oom-adj",
		"ptrace-agent", "ptrace-init")
	if !strings.Contains(r.Stdout, "info agent-pid: 1\n") {
		t.Errorf("the agent is not PID 1: %q", r.Stdout)
	}
	if strings.Contains(r.Stdout, "BREACH") {
		t.Logf("stdout:\n%s", r.Stdout)
	}
}

// TestForkBombLeavesAgentWorking runs the bash fork bomb three times: the
// agent must survive the exhausted pids limit and report the stage (timeout,
// SIGKILL, timings), not die with the sandbox.
func TestForkBombLeavesAgentWorking(t *testing.T) {
	h := newHarness(t, "bash")
	survived := 0
	for i := range 3 {
		r := h.run(engine.Request{Code: bashForkBomb, TimeoutSeconds: 4}, 30*time.Second)
		if r.TimedOut && r.Status == engine.StatusTimeout && r.Signal == "SIGKILL" && r.DurationMs >= 3900 {
			survived++
			continue
		}
		if r.Status != engine.StatusKilled {
			t.Errorf("run %d: want a timeout reported by the agent (or, rarely, a clear killed), got status %s message %q duration %d ms", i, r.Status, r.ExitReason, r.DurationMs)
		}
		t.Logf("run %d: the agent did not survive: %q", i, r.ExitReason)
	}
	// Before the spare threads, the agent died in most bombs; now it must
	// survive most of them even on a loaded machine.
	if survived < 2 {
		t.Errorf("the agent survived %d of 3 fork bombs", survived)
	}
}

// TestPoolCloseRemovesEverySandbox closes the warm pool while it is
// refilling (a sandbox creation in flight, as after any run): no container
// may be left behind.
func TestPoolCloseRemovesEverySandbox(t *testing.T) {
	cfg := config.Default()
	cfg.Pool.Size = 0
	cfg.Pool.Sizes = []string{"bash=2"}
	e, b, view := engineOn(t, &cfg)
	testutil.RequireImage(t, b, e.Registry(), "bash")
	t.Cleanup(func() { view.checkNoLeftovers(t) })
	for range 3 {
		e.StartPool()
		waitPoolFull(t, e)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo ok"}, engine.RunOptions{})
		if err != nil || r.Stdout != "ok\n" {
			t.Fatalf("run: %v %+v", err, r)
		}
		// The pool now refills: a creation is in flight while it closes.
		if err := e.Close(ctx); err != nil {
			t.Errorf("close: %v", err)
		}
		cancel()
	}
}

// waitPoolFull waits until every pool is at its size with no creation in
// flight.
func waitPoolFull(t *testing.T, e *engine.Engine) {
	t.Helper()
	if !testutil.WaitFor(time.Minute, func() bool {
		for _, s := range e.PoolStats() {
			if s.Idle < s.Size || s.Creating > 0 {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("the pool did not fill within a minute: %+v", e.PoolStats())
	}
}
