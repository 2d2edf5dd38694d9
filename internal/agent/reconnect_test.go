package agent

import (
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// sessionSocket is a server's side of a session's agent socket: a listener
// the agent under test dials, first and again after each connection ends.
type sessionSocket struct {
	t    *testing.T
	ln   *net.UnixListener
	path string
}

func listenSession(t *testing.T) *sessionSocket {
	t.Helper()
	path := filepath.Join(t.TempDir(), "agent.sock")
	ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return &sessionSocket{t: t, ln: ln, path: path}
}

func (s *sessionSocket) dial() (io.ReadWriteCloser, error) { return dialUnix(s.path) }

// accept waits for the agent's next connection.
func (s *sessionSocket) accept() *net.UnixConn {
	s.t.Helper()
	_ = s.ln.SetDeadline(time.Now().Add(10 * time.Second))
	c, err := s.ln.AcceptUnix()
	if err != nil {
		s.t.Fatalf("the agent did not connect: %v", err)
	}
	s.t.Cleanup(func() { c.Close() })
	return c
}

// startReconnecting runs ServeReconnecting on the socket's first
// connection; its result arrives on the channel returned.
func startReconnecting(t *testing.T, s *sessionSocket, grace time.Duration) (*net.UnixConn, <-chan error) {
	t.Helper()
	first, err := s.dial()
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() { ended <- ServeReconnecting(first, s.dial, grace) }()
	return s.accept(), ended
}

// send writes req on c.
func send(t *testing.T, c *net.UnixConn, req wire.Request) {
	t.Helper()
	payload, _ := json.Marshal(req)
	if err := wire.WriteFrame(c, wire.Frame{Kind: wire.KindRequest, Payload: payload}); err != nil {
		t.Fatal(err)
	}
}

// readUntilDone reads c's frames until Done and returns the stdout and the
// last stage result; stopAt, if set, returns early once stdout holds it.
func readUntilDone(t *testing.T, c *net.UnixConn, stopAt string) (stdout string, res wire.StageResult) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		f, err := wire.ReadFrame(c)
		if err != nil {
			t.Fatalf("reading the agent's frames (stdout so far %q): %v", stdout, err)
		}
		switch f.Kind {
		case wire.KindStdout:
			stdout += string(f.Payload)
			if stopAt != "" && strings.Contains(stdout, stopAt) {
				return stdout, res
			}
		case wire.KindStage:
			_ = json.Unmarshal(f.Payload, &res)
		case wire.KindDone:
			return stdout, res
		}
	}
}

func pythonCell(dir, code string) wire.Request {
	return wire.Request{Op: wire.OpKernel, Workdir: dir, OutputLimit: 1 << 20, Session: true, Kernel: &wire.KernelCall{
		Name: "python_kernel.py", Argv: []string{"python3", "-u", "{kernel}"}, Code: code, TimeoutMs: unhurried,
	}}
}

func TestSessionAgentKeepsItsInterpreterAndWorkspaceForTheServerThatConnectsAgain(t *testing.T) {
	dir := t.TempDir()
	s := listenSession(t)
	c, ended := startReconnecting(t, s, 300*time.Millisecond)
	send(t, c, pythonCell(dir, "x = 41\nopen('kept.txt', 'w').write('still here')"))
	if _, res := readUntilDone(t, c, ""); res.ExitCode != 0 || res.Error != "" {
		t.Fatalf("first cell: %+v", res)
	}
	c.Close() // the server went away

	again := s.accept()
	send(t, again, pythonCell(dir, "print(x + 1, open('kept.txt').read())"))
	stdout, res := readUntilDone(t, again, "")
	if stdout != "42 still here\n" || res.KernelRestarted {
		t.Errorf("after the server connected again: stdout %q, %+v; want the interpreter's x and the file kept", stdout, res)
	}
	again.Close()
	s.ln.Close() // no server comes back

	select {
	case err := <-ended:
		if err == nil || !strings.Contains(err.Error(), "no server connected again within 300ms") {
			t.Errorf("ServeReconnecting with no server back: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the agent kept waiting past its grace period")
	}
}

func TestSessionAgentCancelsTheRequestRunningWhenItsServerGoesAway(t *testing.T) {
	dir := t.TempDir()
	s := listenSession(t)
	c, _ := startReconnecting(t, s, time.Minute)
	send(t, c, wire.Request{Workdir: dir, OutputLimit: 1 << 10, Session: true, Stages: []wire.Stage{
		{Name: "run", Argv: []string{"sh", "-c", "echo started; sleep 60"}, TimeoutMs: unhurried},
	}})
	readUntilDone(t, c, "started")
	c.Close()

	// The next server's request runs at once: the sleep that nobody would
	// read the result of is gone.
	again := s.accept()
	start := time.Now()
	send(t, again, wire.Request{Workdir: dir, OutputLimit: 1 << 10, Session: true, Stages: []wire.Stage{
		{Name: "run", Argv: []string{"echo", "next"}, TimeoutMs: unhurried},
	}})
	stdout, res := readUntilDone(t, again, "")
	if stdout != "next\n" || res.ExitCode != 0 {
		t.Errorf("the next server's request: stdout %q, %+v", stdout, res)
	}
	if waited := time.Since(start); waited > 20*time.Second {
		t.Errorf("the next request waited %s for the one nobody reads", waited)
	}
}

func TestReattachGraceReadsPositiveMilliseconds(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"":      0,
		"0":     0,
		"-5":    0,
		"soon":  0,
		"1500":  1500 * time.Millisecond,
		"60000": time.Minute,
	} {
		if got := reattachGrace(v); got != want {
			t.Errorf("reattachGrace(%q) = %s, want %s", v, got, want)
		}
	}
}
