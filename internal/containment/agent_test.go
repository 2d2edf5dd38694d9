package containment_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
)

// The agent and docker-init run with the same uid as the untrusted program
// and are dumpable, so the program can open their stdout (the container's
// attached stdout, read by the server) through /proc/PID/fd/1, or ptrace
// them, and speak the agent's frame protocol to the server directly. The
// tests below say what must hold; both are skipped as known issues.

// TestForgedFramesCannotExhaustServerMemory writes agent frames straight to
// the container's stdout, bypassing the agent's output cap: 320 MiB of
// "stdout" in 32 MiB frames. The server must keep at most max_output_bytes
// of it (its heap stays within budget), and the run must still end clearly.
func TestForgedFramesCannotExhaustServerMemory(t *testing.T) {
	skipKnownIssue(t, "the server buffers every stdout/stderr frame the sandbox sends, without a cap "+
		"(docker.Backend.readFrames appends without limit); a program that writes frames to /proc/1/fd/1 "+
		"bypasses the agent's max_output_bytes and grows the server's heap without bound")
	h := newHarness(t, "python")
	code := `import os, struct, time
fd = os.open('/proc/1/fd/1', os.O_WRONLY)
chunk = b'A' * (32 << 20)
frame = b'O' + bytes([0]) + struct.pack('>I', len(chunk)) + chunk
for i in range(10):
    os.write(fd, frame)
print("sent 320 MiB of forged frames", flush=True)
time.sleep(1)`
	w := watchHeap()
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 60*time.Second)
	w.check(t, heapBudget)
	if full, ok := h.e.Outputs().Get(r.StdoutURI); ok && len(full) > h.cfg.Limits.MaxOutputBytes {
		t.Errorf("the server kept %d bytes of stdout, over max_output_bytes (%d)", len(full), h.cfg.Limits.MaxOutputBytes)
	}
}

// TestAgentIsOutOfReach checks that the program cannot reach the processes
// that report its result: it must not be able to open the container's
// stdout through /proc/1/fd/1 or the agent's /proc/PID/fd/1, read the
// agent's memory, or ptrace the agent or init.
func TestAgentIsOutOfReach(t *testing.T) {
	skipKnownIssue(t, "the agent and docker-init run as the sandbox user (uid 10001) and are dumpable: "+
		"the program can ptrace them and write to /proc/1/fd/1, forging its own result "+
		"(status, exit code, timings, flags) and ending the run early")
	h := newHarness(t, "python")
	code := `import ctypes, errno, os
libc = ctypes.CDLL(None, use_errno=True)
agent = [p for p in os.listdir('/proc') if p.isdigit() and p != '1'
         and open('/proc/%s/cmdline' % p, 'rb').read().startswith(b'/opt/mcp-code-runner/agent')][0]
def attempt(name, f):
    try:
        f()
        print("BREACH", name + ":", "succeeded")
    except OSError as e:
        print("ok", name + ":", errno.errorcode.get(e.errno, e.errno))
def ptrace(pid):
    def f():
        if libc.ptrace(16, int(pid), None, None) != 0:
            raise OSError(ctypes.get_errno(), "ptrace")
        libc.ptrace(17, int(pid), None, None)
    return f
attempt("init-stdout", lambda: os.close(os.open('/proc/1/fd/1', os.O_WRONLY)))
attempt("agent-stdout", lambda: os.close(os.open('/proc/%s/fd/1' % agent, os.O_WRONLY)))
attempt("agent-mem", lambda: open('/proc/%s/mem' % agent, 'rb').close())
attempt("ptrace-agent", ptrace(agent))
attempt("ptrace-init", ptrace(1))`
	r := h.run(engine.Request{Code: code, TimeoutSeconds: 10}, 30*time.Second)
	probeReport(t, r, "init-stdout", "agent-stdout", "agent-mem", "ptrace-agent", "ptrace-init")
	if strings.Contains(r.Stdout, "BREACH") {
		t.Logf("stdout:\n%s", r.Stdout)
	}
}
