//go:build !fast

// Package e2e drives the real binary: serve over HTTP, shut it down, kill
// it, and check what is left in Docker.
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

type server struct {
	cmd *exec.Cmd
	url string
}

func freePort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startServer runs `serve --http` with a bash pool of poolSize and waits
// until it answers.
func startServer(t *testing.T, poolSize int) *server {
	t.Helper()
	return serveOn(t, t.TempDir(), "--pool-size", "0", "--pool-sizes", "bash="+strconv.Itoa(poolSize), "--sweep-interval-seconds", "2")
}

// serveOn runs `serve --http` on dataDir with the flags given and waits
// until it answers.
func serveOn(t *testing.T, dataDir string, flags ...string) *server {
	t.Helper()
	return serveAt(t, fmt.Sprintf("127.0.0.1:%d", freePort(t)), dataDir, flags...)
}

// stopServer ends a server a test started, as an operator does (SIGTERM:
// it closes its sessions and removes its sandboxes), unless it has ended
// already (a test killed it). A session's sandbox of a server killed
// outright waits for a server on the same state store to re-attach to it,
// which the sweeps of other stores' servers leave to it.
func stopServer(t *testing.T, cmd *exec.Cmd) {
	if cmd.ProcessState != nil {
		return
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(time.Minute):
		t.Errorf("the server (pid %d) did not exit within a minute of SIGTERM", cmd.Process.Pid)
		_ = cmd.Process.Kill()
		<-exited
	}
}

// serveAt is serveOn at addr: a server that replaces a stopped one takes
// its address.
func serveAt(t *testing.T, addr, dataDir string, flags ...string) *server {
	t.Helper()
	bin := testutil.ServerBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "--data-dir", dataDir, "--http", addr}, flags...)...)
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stopServer(t, cmd) })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("server:", sc.Text())
		}
	}()
	s := &server{cmd: cmd, url: "http://" + addr + "/mcp"}
	waitFor(t, "the server to listen on "+addr, 20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	return s
}

func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		All: true, Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(pid)),
	})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID[:12])
	}
	return ids
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) time.Duration {
	t.Helper()
	start := time.Now()
	testutil.Eventually(t, limit, cond, what)
	return time.Since(start)
}

// callOutcome is what a run_code call returned.
type callOutcome struct {
	text string
	err  error
}

// startCall calls run_code with code in the background. started is closed
// when the run's first output arrives (as a progress notification), so the
// run is in flight in its sandbox; got receives the call's outcome.
func startCall(url, code string, timeoutSeconds int) (started <-chan struct{}, got <-chan callOutcome) {
	first := make(chan struct{})
	out := make(chan callOutcome, 1)
	var once sync.Once
	go func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
			ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { once.Do(func() { close(first) }) },
		})
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			out <- callOutcome{err: err}
			return
		}
		defer cs.Close()
		args := map[string]any{"language": "bash", "code": code}
		if timeoutSeconds > 0 {
			args["timeout_seconds"] = timeoutSeconds
		}
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Meta: mcp.Meta{"progressToken": "e2e"}, Name: "run_code", Arguments: args})
		if err != nil {
			out <- callOutcome{err: err}
			return
		}
		out <- callOutcome{text: res.Content[0].(*mcp.TextContent).Text}
	}()
	return first, out
}

// waitStarted waits until the run of startCall is in flight.
func waitStarted(t *testing.T, started <-chan struct{}, got <-chan callOutcome) {
	t.Helper()
	select {
	case <-started:
	case o := <-got:
		t.Fatalf("the run ended before it was seen running: %q %v", o.text, o.err)
	case <-time.After(60 * time.Second):
		t.Fatal("the run showed no output within 60 s")
	}
}

func runBash(t *testing.T, url, code string) string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": code}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

// TestShutdownLeavesNothing: SIGTERM while a run is in flight and the pool
// is full; the server exits and none of its containers remain.
func TestShutdownLeavesNothing(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	s := startServer(t, 3)
	pid := s.cmd.Process.Pid
	waitFor(t, "pool filled", 30*time.Second, func() bool { return len(containersOf(t, cli, pid)) >= 3 })
	if out := runBash(t, s.url, "echo warm"); !strings.Contains(out, "ok") {
		t.Fatalf("run: %s", out)
	}
	started, got := startCall(s.url, "echo started; sleep 3; echo late", 0)
	waitStarted(t, started, got)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("server exited: %v", err)
	case <-time.After(60 * time.Second):
		t.Fatal("server did not exit within 60 s of SIGTERM")
	}
	if left := containersOf(t, cli, pid); len(left) > 0 {
		t.Fatalf("containers left after shutdown: %v", left)
	}
}

// TestCrashRecovery: kill -9 the server with a full pool and a run in
// flight; a new server removes every orphan within 10 s of starting.
func TestCrashRecovery(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	s := startServer(t, 3)
	pid := s.cmd.Process.Pid
	waitFor(t, "pool filled", 30*time.Second, func() bool { return len(containersOf(t, cli, pid)) >= 3 })
	started, got := startCall(s.url, "echo started; sleep 30", 0)
	waitStarted(t, started, got)
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	orphans := containersOf(t, cli, pid)
	if len(orphans) == 0 {
		t.Fatal("no orphans to recover: the test setup failed")
	}
	next := startServer(t, 0)
	took := waitFor(t, "orphans removed", 10*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
	t.Logf("%d orphans removed %s after the new server listened", len(orphans), took)
	_ = next.cmd.Process.Signal(syscall.SIGTERM)
	_ = next.cmd.Wait()
	if left := containersOf(t, cli, next.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("second server left %v", left)
	}
}

// TestRefusesOpenListener: a non-loopback address without authentication
// is refused before anything listens.
func TestRefusesOpenListener(t *testing.T) {
	out, err := exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--auth-token") {
		t.Fatalf("serve on 0.0.0.0 without a token: err %v, output %s", err, out)
	}
}

// TestRefusesARuntimeTheDaemonLacks: a configured OCI runtime the daemon
// does not have stops the server at start, with the runtimes it does have.
func TestRefusesARuntimeTheDaemonLacks(t *testing.T) {
	testutil.RequireDocker(t)
	out, err := exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0", "--runtime", "no-such-runtime").CombinedOutput()
	if err == nil || !strings.Contains(string(out), `runtime "no-such-runtime" is configured, and the daemon has `) || !strings.Contains(string(out), "runc") {
		t.Fatalf("serve --runtime no-such-runtime: err %v, output %s", err, out)
	}
}

// TestShutdownKillsRunsAfterGrace: a run longer than the grace period is
// killed at its end; the client gets a result saying so, and the server
// exits promptly with nothing left.
func TestShutdownKillsRunsAfterGrace(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	bin := testutil.ServerBinary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "serve", "--data-dir", t.TempDir(), "--http", addr, "--pool-size", "0", "--pool-sizes", "bash=1", "--shutdown-grace-seconds", "2")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	url := "http://" + addr + "/mcp"
	waitFor(t, "listening", 20*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	started, got := startCall(url, "echo started; sleep 50", 60)
	waitStarted(t, started, got)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		t.Logf("server exited: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("server did not exit within 30 s of SIGTERM with a 2 s grace")
	}
	t.Logf("server exited %s after SIGTERM", time.Since(start))
	select {
	case o := <-got:
		if o.err == nil && !strings.Contains(o.text, "killed") {
			t.Errorf("the long run's result: %q; want it killed", o.text)
		}
	case <-time.After(5 * time.Second):
		t.Error("the client never got an answer")
	}
	if left := containersOf(t, cli, cmd.Process.Pid); len(left) > 0 {
		t.Fatalf("containers left: %v", left)
	}
}
