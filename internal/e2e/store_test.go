//go:build !fast

package e2e

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// The hostile starts of the state store, each with the real binary: a
// store the server cannot use stops it before it listens, with an error
// that names what is wrong and how to fix it, and a non-zero exit.

// serveRefused runs `serve --http ADDR args...` and returns its output once
// it has exited; the test fails when it exits 0 or when anything listened
// on ADDR.
func serveRefused(t *testing.T, env []string, args ...string) string {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	cmd := exec.Command(testutil.ServerBinary(t), append([]string{"serve", "--http", addr}, args...)...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Fatalf("serve exited 0; want a refusal. Output:\n%s", out.String())
		}
	case <-time.After(60 * time.Second):
		_ = cmd.Process.Kill()
		killed := <-done
		t.Fatalf("serve still running after 60 s (killed: %v); want a refusal. Output:\n%s", killed, out.String())
	}
	if strings.Contains(out.String(), "serving MCP") {
		t.Errorf("serve listened before it refused:\n%s", out.String())
	}
	if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
		c.Close()
		t.Errorf("something listens on %s", addr)
	}
	return out.String()
}

func TestServeRefusesADataDirectoryAnotherServerHolds(t *testing.T) {
	dir := t.TempDir()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	first := exec.Command(testutil.ServerBinary(t), "serve", "--http", addr, "--data-dir", dir, "--pool-size", "0", "--pool-sizes", "")
	var firstOut bytes.Buffer
	first.Stdout, first.Stderr = &firstOut, &firstOut
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = first.Process.Kill(); _ = first.Wait() })
	waitFor(t, "the first server to listen on "+addr, 30*time.Second, func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})

	out := serveRefused(t, nil, "--data-dir", dir)
	want := "data directory " + dir + " is in use by another mcp-code-runner server; give each server its own data_dir, or use the etcd store for replicas"
	if !strings.Contains(out, want) {
		t.Errorf("the second server said:\n%s\nwant %q", out, want)
	}

	// The first one serves on, and once it stops the directory is free.
	if err := first.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := first.Wait(); err != nil {
		t.Fatalf("the first server: %v\n%s", err, firstOut.String())
	}
}

func TestServeRefusesADataDirectoryThatIsNotItsOwn(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.db")
	garbage := bytes.Repeat([]byte("this is not a database\n"), 400)
	if err := os.WriteFile(path, garbage, 0o600); err != nil {
		t.Fatal(err)
	}
	out := serveRefused(t, nil, "--data-dir", dir)
	if !strings.Contains(out, path+" is not a state file this server can read") || !strings.Contains(out, "left untouched") {
		t.Errorf("serve on a garbage state.db said:\n%s", out)
	}
	if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, garbage) {
		t.Errorf("the refused file changed (%v)", err)
	}
}

func TestServeWithItsEtcdDownDoesNotServe(t *testing.T) {
	endpoint := "http://" + storetest.ClosedPort(t)
	out := serveRefused(t, []string{"MCR_STORE_BACKEND=etcd", "MCR_STORE_ETCD_ENDPOINTS=" + endpoint, "MCR_STORE_ETCD_DIAL_TIMEOUT_SECONDS=1"})
	for _, want := range []string{"state store", "etcd at " + endpoint + " did not answer within 1s", "start etcd"} {
		if !strings.Contains(out, want) {
			t.Errorf("serve with etcd down said:\n%s\nwant %q", out, want)
		}
	}
}
