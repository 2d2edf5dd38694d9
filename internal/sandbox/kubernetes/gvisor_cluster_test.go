//go:build !fast

package kubernetes_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

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
}

// A run through the engine that asks for isolation gvisor where the
// operator's default is container reports gVisor's kernel and its
// isolation.
func TestClusterRunAsksForGVisor(t *testing.T) {
	c := k8stest.Require(t)
	e, b := testEngine(t, c, nil)
	requireGVisor(t, b)
	res := run(t, e, engine.Request{Language: "bash", Code: "uname -r", Isolation: "gvisor"})
	if res.Status != engine.StatusOK || !strings.HasSuffix(strings.TrimSpace(res.Stdout), "-gvisor") || res.Isolation != "gvisor" {
		t.Fatalf("status %s isolation %q stdout %q stderr %q; want ok, gvisor, gVisor's kernel", res.Status, res.Isolation, res.Stdout, res.Stderr)
	}
}
