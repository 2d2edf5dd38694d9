//go:build !fast

package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// sharedPortReplica is a server on a port it shares with others
// (http.reuse_port), probed on its own health socket, with an audit log of
// its own: the calls it ran.
type sharedPortReplica struct {
	*server
	health string
	audit  string
}

// startSharedPortReplica starts a replica on addr and waits until it is
// ready: its own socket answers /readyz (a probe of the port could reach
// another replica).
func startSharedPortReplica(t *testing.T, addr, endpoint string) sharedPortReplica {
	t.Helper()
	dir := t.TempDir()
	health, audit := filepath.Join(dir, "health.sock"), filepath.Join(dir, "audit.log")
	s := serveAt(t, addr, dir, append(replicaFlags(endpoint), "--http-reuse-port=true", "--http-health-socket", health, "--audit-log", audit)...)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", health)
	}}}
	waitFor(t, "a replica's health socket to say ready", 60*time.Second, func() bool {
		resp, err := client.Get("http://health/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return sharedPortReplica{server: s, health: health, audit: audit}
}

// runsIn counts the run_code calls an audit log records: the calls its
// server ran.
func runsIn(t *testing.T, audit string) int {
	t.Helper()
	data, err := os.ReadFile(audit)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte(`"tool":"run_code"`))
}

// refused says err is a refused connection: the one error that proves a
// request never reached a server, and so the only one a client may retry
// without the risk of running a call twice.
func refused(err error) bool {
	return errors.Is(err, syscall.ECONNREFUSED)
}

// stopReplica sends SIGTERM, as Kubernetes does to a replaced pod, and waits
// for the server to exit.
func stopReplica(t *testing.T, r sharedPortReplica) {
	t.Helper()
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("a replica stopped with SIGTERM exited with %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("a replica did not exit within 90 s of SIGTERM")
	}
}

// loadOutcome counts a load's calls.
type loadOutcome struct {
	answered, refused atomic.Int64
	mu                sync.Mutex
	failures          []string
}

func (o *loadOutcome) fail(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.failures = append(o.failures, fmt.Sprintf(format, args...))
}

// postRunCode posts one sessionless run_code call (each on a new
// connection, so that the kernel picks a replica for each) and returns the
// HTTP status and the body, or an error when no answer came.
func postRunCode(url, token, code string) (int, string, error) {
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": "run_code", "arguments": map[string]any{"language": "bash", "code": code}}})
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+token)
	client := &http.Client{Timeout: 2 * time.Minute, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	var out strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<22)
	for sc.Scan() {
		out.WriteString(sc.Text())
		out.WriteByte('\n')
	}
	if err := sc.Err(); err != nil {
		// The connection broke before the whole answer came: no answer.
		return 0, "", err
	}
	return resp.StatusCode, out.String(), nil
}

// steadyLoad makes workers call run_code in turn until ctx ends. A call
// whose connection was refused never reached a server, and is sent again;
// any other error (a reset, a body cut off, a timeout) and any answer that
// is not the call's own output is a failure.
func steadyLoad(ctx context.Context, url string, workers int) (*loadOutcome, *sync.WaitGroup) {
	out := &loadOutcome{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for n := 0; ctx.Err() == nil; n++ {
				want := fmt.Sprintf("worker-%d-call-%d", w, n)
				status, body, err := postRunCode(url, restartAlice, "echo "+want)
				for refused(err) && ctx.Err() == nil {
					out.refused.Add(1)
					time.Sleep(100 * time.Millisecond)
					status, body, err = postRunCode(url, restartAlice, "echo "+want)
				}
				switch {
				case refused(err):
					return // the load ended while no server listened
				case err != nil:
					out.fail("%s: no full answer: %v", want, err)
				case status != http.StatusOK || !strings.Contains(body, `"stdout":"`+want+`\n"`) || strings.Contains(body, `"isError":true`):
					out.fail("%s: HTTP %d: %.500s", want, status, body)
				default:
					out.answered.Add(1)
				}
			}
		})
	}
	return out, &wg
}

// TestReplicasOnOnePortAreReplacedOneAtATimeUnderLoadAndNoCallFails: a
// rolling restart, as a Deployment does it, of two servers (real binaries,
// real Docker, a real etcd) that share one port (http.reuse_port): a new
// replica starts and is ready, then an old one gets SIGTERM, twice, while
// two clients call run_code without pause. Every call gets its own right
// answer; a call whose connection was refused (no listener at that moment)
// is sent again, and any other error fails the test. Every replica, old
// and new, answers calls (its audit log says which it ran), and the calls
// the replicas ran are exactly the calls answered: none lost after it
// ran, none run twice.
func TestReplicasOnOnePortAreReplacedOneAtATimeUnderLoadAndNoCallFails(t *testing.T) {
	testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	url := "http://" + addr + "/mcp"
	old := []sharedPortReplica{startSharedPortReplica(t, addr, etcd.Endpoint), startSharedPortReplica(t, addr, etcd.Endpoint)}
	all := slices.Clone(old)

	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	load, wg := steadyLoad(ctx, url, 2)
	// Each connection is new, so the kernel spreads calls over the port's
	// listeners: every replica in the group answers some.
	answersFrom := func(r sharedPortReplica, n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d calls answered by the replica with PID %d", n, r.cmd.Process.Pid), 2*time.Minute, func() bool { return runsIn(t, r.audit) >= n })
	}
	for _, r := range old {
		answersFrom(r, 3)
	}
	for _, r := range old {
		next := startSharedPortReplica(t, addr, etcd.Endpoint)
		all = append(all, next)
		stopReplica(t, r)
		answersFrom(next, 3)
	}
	stop()
	wg.Wait()
	for _, f := range load.failures {
		t.Errorf("a call failed during the rolling restart: %s", f)
	}
	ran := func() (n int) {
		for _, r := range all {
			n += runsIn(t, r.audit)
		}
		return n
	}
	// A server writes a call's audit line as the call ends, maybe just
	// after its answer.
	waitFor(t, "every answered call in an audit log", 30*time.Second, func() bool { return ran() >= int(load.answered.Load()) })
	if got, want := ran(), int(load.answered.Load()); got != want {
		t.Errorf("the replicas ran %d calls, and %d were answered right: a call ran without its answer, or twice", got, want)
	}
	t.Logf("rolling restart of 2 replicas on one port: %d calls answered right, %d sent again after a refused connection", load.answered.Load(), load.refused.Load())
}
