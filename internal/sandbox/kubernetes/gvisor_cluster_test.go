//go:build !fast

package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/k8stest"
)

// requireGVisor fails (under CI=true) or skips the test when the test
// cluster has no RuntimeClass for isolation gvisor: scripts/k8s/up.sh makes
// it, with containerd's runtime handler runsc, when gVisor is installed.
func requireGVisor(t *testing.T, b sandbox.Backend) {
	t.Helper()
	err := sandbox.IsolationSupport(b, sandbox.IsolationGVisor)
	if err == nil {
		return
	}
	msg := "the test cluster cannot run isolation gvisor: " + err.Error() +
		" (install gVisor with make gvisor, then restart the cluster: make k8s-down k8s-up)"
	if os.Getenv("CI") == "true" {
		t.Fatal(msg + " (required under CI=true)")
	}
	t.Skip(msg)
}

// A sandbox of isolation gvisor is a pod of the RuntimeClass gvisor, whose
// handler runsc runs its containers on gVisor's kernel; a sandbox of
// isolation container, on the same node, still runs on the host's.
func TestClusterGVisorSandboxRunsOnGVisorsKernel(t *testing.T) {
	c := k8stest.Require(t)
	b := c.Backend(t, nil)
	requireGVisor(t, b)
	e := engine.New(k8stest.EngineConfig(), languages.Builtin(), b, nil)
	lang, _ := languages.Builtin().Lookup("bash")
	host, err := os.ReadFile("/proc/version")
	if err != nil {
		t.Fatal(err)
	}
	defer c.NoLeftovers(t, k8stest.Namespace, b.Owner())

	probe := "uname -r; cat /proc/version; [ -e /proc/kallsyms ] && echo kallsyms=present; true"
	node := ""
	for _, tt := range []struct {
		isolation sandbox.Isolation
		class     string // the pod's runtimeClassName, "" for none
	}{
		{sandbox.IsolationGVisor, "gvisor"},
		{sandbox.IsolationContainer, ""},
	} {
		t.Run(string(tt.isolation), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			tpl := e.Template(lang)
			tpl.Isolation = tt.isolation
			start := time.Now()
			sb, err := b.Create(ctx, tpl)
			if err != nil {
				t.Fatal(err)
			}
			defer sb.Close()
			t.Logf("%s sandbox pod started in %s", tt.isolation, time.Since(start).Round(time.Millisecond))

			pod, err := c.Client.CoreV1().Pods(k8stest.Namespace).Get(ctx, sb.ID(), metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			node = pod.Spec.NodeName
			got := ""
			if pod.Spec.RuntimeClassName != nil {
				got = *pod.Spec.RuntimeClassName
			}
			if got != tt.class {
				t.Errorf("the stored pod's runtimeClassName is %q; want %q", got, tt.class)
			}

			res, err := sb.Exec(ctx, sandbox.Job{Request: bashRequest(probe), Deadline: time.Minute}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Stages) == 0 {
				t.Fatalf("no stage ran: %+v", res)
			}
			out := string(res.Stages[0].Stdout)
			t.Logf("inside the %s pod:\n%s", tt.isolation, out)
			underGVisor := strings.Contains(strings.SplitN(out, "\n", 2)[0], "gvisor")
			onHost := strings.Contains(out, strings.TrimSpace(string(host)))
			switch tt.isolation {
			case sandbox.IsolationGVisor:
				if !underGVisor || onHost {
					t.Errorf("uname -r in a gvisor pod does not name gVisor's kernel, or the pod sees the host's %q:\n%s", host, out)
				}
				if strings.Contains(out, "kallsyms=present") {
					t.Errorf("the host kernel's /proc/kallsyms is present under gVisor:\n%s", out)
				}
			default:
				if underGVisor || !onHost {
					t.Errorf("a container pod does not see the host's kernel %q:\n%s", host, out)
				}
			}
		})
	}
	if node != "" {
		sandboxesStopped(t, c, node)
	}
}

// sandboxesStopped fails the test unless, within a minute, the kubelet of
// node runs no more pod sandboxes than the API server has live pods bound
// to it. A closed sandbox's pod leaves the API at once (deleted with grace
// period 0); its sandbox must then stop on the node too. A runtime handler
// that cannot kill its pods (a gVisor that ignored runsc kill) would leave
// it running there, unseen by the API.
func sandboxesStopped(t *testing.T, c *k8stest.Cluster, node string) {
	t.Helper()
	var running, bound int
	var err error
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(500 * time.Millisecond) {
		if running, bound, err = nodeSandboxes(c, node); err == nil && running <= bound {
			return
		}
		if time.Now().After(deadline) {
			if err != nil {
				t.Errorf("a minute after the sandboxes closed, the pod sandboxes on %s cannot be counted: %v", node, err)
			} else {
				t.Errorf("a minute after the sandboxes closed, the kubelet on %s still runs %d pod sandboxes for %d live pods: a deleted pod's sandbox was not stopped by its runtime", node, running, bound)
			}
			return
		}
	}
}

// nodeSandboxes returns how many pod sandboxes the kubelet of node runs
// (its metric kubelet_running_pods) and how many pods not yet finished the
// API server has bound to node.
func nodeSandboxes(c *k8stest.Cluster, node string) (running, bound int, err error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes", node, "proxy", "metrics").DoRaw(ctx)
	if err != nil {
		return 0, 0, fmt.Errorf("the kubelet's metrics: %w", err)
	}
	running = -1
	for line := range strings.Lines(string(raw)) {
		if v, ok := strings.CutPrefix(line, "kubelet_running_pods "); ok {
			if running, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return 0, 0, fmt.Errorf("kubelet_running_pods %q: %w", v, err)
			}
		}
	}
	if running < 0 {
		return 0, 0, errors.New("the kubelet reports no kubelet_running_pods")
	}
	pods, err := c.Client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
	if err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			bound++
		}
	}
	return running, bound, nil
}
