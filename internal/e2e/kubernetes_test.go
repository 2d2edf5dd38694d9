//go:build !fast

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

	"github.com/modelcontextprotocol/go-sdk/mcp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/kubernetes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/k8stest"
)

// startKubernetesServer runs `serve --http --backend kubernetes` on the
// test cluster with the given pool sizes ("python=1,bash=1") and waits
// until it answers.
func startKubernetesServer(t *testing.T, c *k8stest.Cluster, pools string) *server {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	k := c.Config()
	cmd := exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", addr,
		"--backend", "kubernetes", "--kubernetes-kubeconfig", k.Kubeconfig, "--kubernetes-namespace", k.Namespace,
		"--kubernetes-agent-image", k.AgentImage, "--kubernetes-image-pull-policy", k.ImagePullPolicy,
		"--pool-size", "0", "--pool-sizes", pools, "--sweep-interval-seconds", "2", "--cpus", fmt.Sprint(k8stest.SandboxCPUs))
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
	waitFor(t, "the server listening", 30*time.Second, func() bool {
		conn, err := net.Dial("tcp", addr)
		if err == nil {
			conn.Close()
		}
		return err == nil
	})
	return &server{cmd: cmd, url: "http://" + addr + "/mcp"}
}

// podsOfServer lists the sandbox pods the server with this PID made.
func podsOfServer(t *testing.T, c *k8stest.Cluster, pid int) []string {
	return podsOfServerIn(t, c, pid, "")
}

// podsOfServerIn lists the sandbox pods the server with this PID made that
// are in phase (any phase if "").
func podsOfServerIn(t *testing.T, c *k8stest.Cluster, pid int, phase corev1.PodPhase) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	list, err := c.Client.CoreV1().Pods(k8stest.Namespace).List(ctx, metav1.ListOptions{LabelSelector: kubernetes.LabelSandbox + "=true"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		if p.Annotations[kubernetes.AnnotationOwnerPID] == strconv.Itoa(pid) && (phase == "" || p.Status.Phase == phase) {
			names = append(names, p.Name)
		}
	}
	return names
}

func runCode(t *testing.T, url, lang, code string) string {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "code": code}})
	if err != nil || res.IsError {
		t.Fatalf("run_code %s: %v %+v", lang, err, res)
	}
	var text []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			text = append(text, tc.Text)
		}
	}
	return strings.Join(text, "\n")
}

// run_code in Python and Bash through MCP, on a server with --backend
// kubernetes: warm (from the pool) and cold.
func TestKubernetesRunCodeThroughMCP(t *testing.T) {
	c := k8stest.Require(t)
	s := startKubernetesServer(t, c, "python=1")
	pid := s.cmd.Process.Pid
	waitFor(t, "a warm python pod", 2*time.Minute, func() bool { return len(podsOfServerIn(t, c, pid, corev1.PodRunning)) >= 1 })
	for _, tt := range []struct{ lang, code, want string }{
		{"python", "print(6*7)", "42"},
		{"bash", "echo $((40+2)) from $(id -u)", "42 from 10001"},
	} {
		start := time.Now()
		out := runCode(t, s.url, tt.lang, tt.code)
		if !strings.Contains(out, tt.want) || !strings.Contains(out, "ok") {
			t.Errorf("run_code %s: %s; want %q", tt.lang, out, tt.want)
		}
		t.Logf("run_code %s through MCP on Kubernetes: %s", tt.lang, time.Since(start))
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	_ = s.cmd.Wait()
	if left := podsOfServer(t, c, pid); len(left) > 0 {
		t.Errorf("pods left after a clean shutdown: %v", left)
	}
}

// kill -9 the server with a full pool and a run in flight; the next server
// deletes its pods.
func TestKubernetesServerKilledLeavesNoPods(t *testing.T) {
	c := k8stest.Require(t)
	s := startKubernetesServer(t, c, "bash=2")
	pid := s.cmd.Process.Pid
	waitFor(t, "the pool filled", 2*time.Minute, func() bool { return len(podsOfServer(t, c, pid)) >= 2 })
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
	orphans := podsOfServer(t, c, pid)
	if len(orphans) == 0 {
		t.Fatal("no orphans to recover: the test setup failed")
	}
	next := startKubernetesServer(t, c, "")
	took := waitFor(t, "the orphans deleted", 30*time.Second, func() bool { return len(podsOfServer(t, c, pid)) == 0 })
	t.Logf("%d orphan pods deleted %s after the next server listened", len(orphans), took)
	_ = next.cmd.Process.Signal(syscall.SIGTERM)
	_ = next.cmd.Wait()
	if left := podsOfServer(t, c, next.cmd.Process.Pid); len(left) > 0 {
		t.Errorf("the next server left %v", left)
	}
}
