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
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
	bin := testutil.ServerBinary(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(bin, "serve", "--http", addr, "--pool-size", "0", "--pool-sizes", "bash="+strconv.Itoa(poolSize), "--sweep-interval-seconds", "2")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log("server:", sc.Text())
		}
	}()
	s := &server{cmd: cmd, url: "http://" + addr + "/mcp"}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return s
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("server did not listen on %s", addr)
	return nil
}

func containersOf(t *testing.T, cli *client.Client, pid int) []string {
	t.Helper()
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{
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
	for time.Since(start) < limit {
		if cond() {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("%s: not within %s", what, limit)
	return 0
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
	go func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		if cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil); err == nil {
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "sleep 3; echo late"}})
		}
	}()
	time.Sleep(500 * time.Millisecond)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- s.cmd.Wait() }()
	select {
	case <-done:
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
	go func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		if cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, DisableStandaloneSSE: true}, nil); err == nil {
			_, _ = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "sleep 30"}})
		}
	}()
	time.Sleep(time.Second)
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
	out, err := exec.Command(testutil.ServerBinary(t), "serve", "--http", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--auth-token") {
		t.Fatalf("serve on 0.0.0.0 without a token: err %v, output %s", err, out)
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
	cmd := exec.Command(bin, "serve", "--http", addr, "--pool-size", "0", "--pool-sizes", "bash=1", "--shutdown-grace-seconds", "2")
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
	type outcome struct {
		text string
		err  error
	}
	got := make(chan outcome, 1)
	go func() {
		c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
		if err != nil {
			got <- outcome{err: err}
			return
		}
		defer cs.Close()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo started; sleep 50", "timeout_seconds": 60}})
		if err != nil {
			got <- outcome{err: err}
			return
		}
		got <- outcome{text: res.Content[0].(*mcp.TextContent).Text}
	}()
	// The run has its sandbox once the pool has made a second one to
	// replace it (a fixed sleep failed on a loaded machine: the run was
	// still waiting for its sandbox when the signal came).
	waitFor(t, "the run to take its sandbox", 60*time.Second, func() bool { return len(containersOf(t, cli, cmd.Process.Pid)) >= 2 })
	time.Sleep(500 * time.Millisecond)
	start := time.Now()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
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
