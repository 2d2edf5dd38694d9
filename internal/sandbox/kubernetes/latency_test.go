//go:build !fast

package kubernetes_test

import (
	"bytes"
	"context"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/k8stest"
)

// TestClusterLatencyFigures measures what the backend's design rests on:
// pod creation to an attached agent, a job's round trip over the attach
// stream against a fresh exec through the API server into the same pod,
// and deletion. It logs the figures (go test -v) and checks only that
// each works.
func TestClusterLatencyFigures(t *testing.T) {
	c := k8stest.Require(t)
	b := c.Backend(t, nil)
	reg := languages.Builtin()
	bash, _ := reg.Lookup("bash")
	tpl := engine.New(k8stest.EngineConfig(), reg, b, nil).Template(bash)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	start := time.Now()
	sb, err := b.Create(ctx, tpl)
	if err != nil {
		t.Fatal(err)
	}
	created := time.Since(start)
	defer c.NoLeftovers(t, k8stest.Namespace, b.Owner())
	defer sb.Close()

	const n = 10
	var attach, exec []time.Duration
	job := sandbox.Job{Request: bashRequest("true"), Deadline: time.Minute}
	job.Request.Stages[0].Argv = []string{"true"}
	job.Request.Session = true
	for i := range n {
		s := time.Now()
		res, err := sb.Call(ctx, job, nil)
		if err != nil || len(res.Stages) != 1 || res.Stages[0].ExitCode != 0 {
			t.Fatalf("call %d: %v %+v", i, err, res)
		}
		attach = append(attach, time.Since(s))
	}
	for i := range n {
		s := time.Now()
		if err := execTrue(ctx, c, sb.ID()); err != nil {
			t.Fatalf("exec %d: %v", i, err)
		}
		exec = append(exec, time.Since(s))
	}
	start = time.Now()
	sb.Close()
	for {
		_, err := c.Client.CoreV1().Pods(k8stest.Namespace).Get(ctx, sb.ID(), metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the pod was not gone in time")
		}
		time.Sleep(10 * time.Millisecond)
	}
	gone := time.Since(start)
	t.Logf("pod create -> Running -> agent attached: %s", created.Round(time.Millisecond))
	t.Logf("job round trip over the attach stream (`true`, median of %d): %s", n, median(attach).Round(100*time.Microsecond))
	t.Logf("exec round trip through the API server into the same pod (`true`, median of %d): %s", n, median(exec).Round(100*time.Microsecond))
	t.Logf("delete (grace 0) -> gone: %s", gone.Round(time.Millisecond))
}

func execTrue(ctx context.Context, c *k8stest.Cluster, pod string) error {
	req := c.Client.CoreV1().RESTClient().Post().Resource("pods").Namespace(k8stest.Namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "sandbox", Command: []string{"true"}, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewWebSocketExecutor(c.Rest, http.MethodGet, req.URL().String())
	if err != nil {
		return err
	}
	var out bytes.Buffer
	return ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &out})
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}
