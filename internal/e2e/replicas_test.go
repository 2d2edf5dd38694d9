//go:build !fast

package e2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// replicaFlags are the flags of a replica on the etcd at endpoint: alice's
// and bob's tokens, two runs in flight per principal.
func replicaFlags(endpoint string) []string {
	return []string{"--pool-size", "0", "--sweep-interval-seconds", "2",
		"--http-auth-tokens", "alice=" + restartAlice + ",bob=" + restartBob,
		"--store-backend", "etcd", "--store-etcd-endpoints", endpoint, "--quotas-concurrent-runs", "2"}
}

// TestTwoReplicasOnOneEtcdServeEveryHandleAndLoseNothingWithOne: two
// servers (real binaries, real Docker) share a real etcd. A result, an
// output URI, an artifact URI, an execution and a task made through one
// are read through the other by their owner only; a principal's quota of
// concurrent runs counts both; a replica killed with SIGKILL loses no
// finished result, and what it was running ends interrupted with its
// output, through the replica that is left.
func TestTwoReplicasOnOneEtcdServeEveryHandleAndLoseNothingWithOne(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	one := serveOn(t, t.TempDir(), replicaFlags(etcd.Endpoint)...)
	other := serveOn(t, t.TempDir(), replicaFlags(etcd.Endpoint)...)
	aliceOne, aliceOther, bobOther := connectAs(t, one.url, restartAlice), connectAs(t, other.url, restartAlice), connectAs(t, other.url, restartBob)

	var run engine.Result
	call(t, aliceOne, "run_code", map[string]any{"language": "bash",
		"code": `head -c 100000 /dev/zero | tr '\0' x; echo; echo kept > report.txt`}, &run)
	if run.StdoutURI == "" || len(run.Artifacts) != 1 {
		t.Fatalf("the run kept no output or artifact URI: %+v", run)
	}
	if full, err := readResource(aliceOther, run.StdoutURI); err != nil || len(full) < 100000 {
		t.Errorf("the full output through the other replica: %d bytes, %v", len(full), err)
	}
	if got, err := readResource(aliceOther, run.Artifacts[0].URI); err != nil || got != "kept\n" {
		t.Errorf("the artifact through the other replica: %q, %v", got, err)
	}
	for _, uri := range []string{run.StdoutURI, run.Artifacts[0].URI} {
		if _, err := readResource(bobOther, uri); err == nil {
			t.Errorf("bob reads alice's %s through the other replica", uri)
		}
	}
	var finished executions.Snapshot
	call(t, aliceOne, "start_execution", map[string]any{"language": "bash", "code": "echo finished-execution"}, &finished)
	call(t, aliceOther, "get_execution", map[string]any{"execution_id": finished.ExecutionID, "wait_seconds": 30}, &finished)
	if finished.Status != executions.StatusFinished || !strings.Contains(finished.Stdout, "finished-execution") {
		t.Errorf("an execution made through one replica, read through the other: %+v", finished)
	}
	task := startTask(t, one.url, restartAlice, "echo finished-task")
	if result, errMsg := taskRPC(t, other.url, restartAlice, "tasks/result", map[string]any{"taskId": task}); errMsg != "" {
		t.Errorf("a task made through one replica, its result through the other: %v %s", result, errMsg)
	} else if sc, _ := result["structuredContent"].(map[string]any); sc == nil || sc["stdout"] != "finished-task\n" {
		t.Errorf("a task made through one replica, its result through the other: %v", result)
	}

	// Two runs in flight on one replica: alice's quota, counted on both.
	var running []string
	for i := range 2 {
		var s executions.Snapshot
		call(t, aliceOne, "start_execution", map[string]any{"language": "bash", "code": fmt.Sprintf("echo partial-%d; sleep 300", i)}, &s)
		running = append(running, s.ExecutionID)
	}
	res, err := aliceOther.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo third"}})
	if err != nil || !res.IsError || !strings.Contains(textOf(res), "over quota") {
		t.Errorf("alice's third run, through the other replica: %v %s, want the quota's refusal", err, textOf(res))
	}
	waitFor(t, "the running executions' output in the store", 60*time.Second, func() bool {
		for _, id := range running {
			var s executions.Snapshot
			call(t, aliceOther, "get_execution", map[string]any{"execution_id": id, "wait_seconds": 1}, &s)
			if !strings.Contains(s.Stdout, "partial-") {
				return false
			}
		}
		return true
	})

	pid := one.cmd.Process.Pid
	_ = one.cmd.Process.Kill()
	_ = one.cmd.Wait()
	var got executions.Snapshot
	call(t, aliceOther, "get_execution", map[string]any{"execution_id": finished.ExecutionID}, &got)
	if got.Status != executions.StatusFinished {
		t.Errorf("the finished execution after its replica was killed: %+v", got)
	}
	if full, err := readResource(aliceOther, run.StdoutURI); err != nil || len(full) < 100000 {
		t.Errorf("the full output after its replica was killed: %d bytes, %v", len(full), err)
	}
	// The killed replica's heartbeat expires (15 s); the one left ends what
	// it was running as interrupted, with its output.
	for _, id := range running {
		waitFor(t, "the killed replica's execution to end interrupted", 90*time.Second, func() bool {
			call(t, aliceOther, "get_execution", map[string]any{"execution_id": id, "wait_seconds": 1}, &got)
			return got.Status == executions.StatusInterrupted
		})
		if !strings.Contains(got.Stdout, "partial-") {
			t.Errorf("the interrupted execution lost its output: %+v", got)
		}
	}
	// Its places in alice's quota expire with it.
	waitFor(t, "alice's quota free again after her runs' replica died", 90*time.Second, func() bool {
		res, err := aliceOther.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo again"}})
		return err == nil && !res.IsError
	})
	waitFor(t, "the killed replica's containers removed", 60*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}

// textOf is a tool result's text.
func textOf(res *mcp.CallToolResult) string {
	if res == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// TestARollingRestartOfTwoReplicasUnderLoadFailsNoCall: clients call
// run_code steadily through two replicas on one etcd while each replica in
// turn is stopped (SIGTERM) and replaced by a new server at its address.
// A call whose connection was refused (no server at that address now)
// never reached a server and goes to the other; every other error, a
// JSON-RPC or HTTP error among them, fails the test, as does an answer that
// is not the call's own. Every replica, old and new, answers calls (its
// audit log says which it ran), and the replicas ran exactly the calls
// answered.
//
// Every request goes on a connection of its own (ownConnections): a
// connection kept alive between requests can be closed by a stopping server
// just as the client sends its next request on it, which HTTP/1.1 gives no
// server a way to prevent. A connection a stopping server closes without an
// answer (one whose handshake it was still completing as it stopped) is
// counted and its call sent to the other replica: the audit logs prove it
// did not run, since the replicas must have run exactly the calls answered.
func TestARollingRestartOfTwoReplicasUnderLoadFailsNoCall(t *testing.T) {
	testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	flags := append(replicaFlags(etcd.Endpoint), "--quotas-concurrent-runs", "0", "--pool-sizes", "bash=2")
	addrs := []string{fmt.Sprintf("127.0.0.1:%d", freePort(t)), fmt.Sprintf("127.0.0.1:%d", freePort(t))}
	var audits []string
	start := func(addr string) *server {
		dir := t.TempDir()
		audits = append(audits, filepath.Join(dir, "audit.log"))
		return serveAt(t, addr, dir, slices.Concat(flags, []string{"--audit-log", audits[len(audits)-1]})...)
	}
	replicas := []*server{start(addrs[0]), start(addrs[1])}

	var answered, refusals, cuts atomic.Int64
	var mu sync.Mutex
	var failures []string
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, fmt.Sprintf(format, args...))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 4 {
		wg.Go(func() {
			var cs *mcp.ClientSession
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				if cs == nil {
					url := "http://" + addrs[(c+n)%2] + "/mcp"
					s, err := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil).Connect(context.Background(),
						&mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true, MaxRetries: -1,
							HTTPClient: &http.Client{Transport: bearer{token: restartAlice, next: ownConnections}}}, nil)
					switch {
					case refused(err): // no server at that address now: try the other
						refusals.Add(1)
						continue
					case cutBeforeAnswer(err): // the handshake runs no call
						cuts.Add(1)
						continue
					case err != nil:
						fail("connecting to %s: %v", url, err)
						continue
					}
					cs = s
				}
				marker := fmt.Sprintf("call-%d-%d", c, n)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo " + marker}})
				// The next call goes through the other replica, on a new
				// session.
				_ = cs.Close()
				cs = nil
				switch {
				case refused(err): // the server went between the handshake and the call
					refusals.Add(1)
				case cutBeforeAnswer(err):
					// The stopping server closed the connection without an
					// answer. Whether the call ran is what its audit log
					// says: the count below fails the test if it did.
					cuts.Add(1)
				case err != nil:
					fail("%s: %v", marker, err)
				case res.IsError || !strings.Contains(textOf(res), marker):
					fail("%s: %s", marker, textOf(res))
				default:
					answered.Add(1)
				}
			}
		})
	}
	ran := func(audit string) int { return runsIn(t, audit) }
	answersFrom := func(audit string, n int) {
		t.Helper()
		waitFor(t, fmt.Sprintf("%d calls answered by the replica of %s", n, audit), 120*time.Second, func() bool { return ran(audit) >= n })
	}
	waitForCalls := func(what string, more int64) {
		from := answered.Load()
		waitFor(t, what, 120*time.Second, func() bool { return answered.Load() >= from+more })
	}
	answersFrom(audits[0], 3)
	answersFrom(audits[1], 3)
	for i := range replicas {
		if err := replicas[i].cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := replicas[i].cmd.Wait(); err != nil {
			t.Errorf("a replica stopped with SIGTERM exited with %v", err)
		}
		waitForCalls("calls through the replica left", 5)
		replicas[i] = start(addrs[i])
		answersFrom(audits[len(audits)-1], 3)
	}
	close(stop)
	wg.Wait()
	for _, f := range failures {
		t.Errorf("a call failed during the rolling restart: %s", f)
	}
	total := func() (n int) {
		for _, a := range audits {
			n += ran(a)
		}
		return n
	}
	// A server writes a call's audit line as the call ends, maybe just
	// after its answer.
	waitFor(t, "every answered call in an audit log", 30*time.Second, func() bool { return total() >= int(answered.Load()) })
	if got, want := total(), int(answered.Load()); got != want {
		t.Errorf("the replicas ran %d calls, and %d were answered right: a call ran without its answer, or twice", got, want)
	}
	t.Logf("%d calls answered right, %d sent to the other replica after a refused connection and %d after a connection closed without an answer (none of which ran), during the rolling restart",
		answered.Load(), refusals.Load(), cuts.Load())
}

// ownConnections is a transport that opens a connection per request.
var ownConnections = func() http.RoundTripper {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.DisableKeepAlives = true
	return t
}()

// cutBeforeAnswer says err is a connection closed before any answer came
// (EOF, or a reset).
func cutBeforeAnswer(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}
