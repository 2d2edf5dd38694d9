//go:build !fast

package kubernetes_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/kubernetes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/k8stest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// These tests run on the real cluster of `make k8s-up` (see k8stest).

func testEngine(t *testing.T, c *k8stest.Cluster, edit func(*config.Config)) (*engine.Engine, *kubernetes.Backend) {
	t.Helper()
	cfg := k8stest.EngineConfig()
	cfg.Pool.Size, cfg.Pool.Sizes = 0, nil
	if edit != nil {
		edit(&cfg)
	}
	b := c.Backend(t, nil)
	e := engine.New(cfg, languages.Builtin(), b, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.Close(ctx)
		c.NoLeftovers(t, k8stest.Namespace, b.Owner())
	})
	return e, b
}

func run(t *testing.T, e *engine.Engine, req engine.Request) *engine.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := e.Run(ctx, req, engine.RunOptions{})
	if err != nil {
		t.Fatalf("run %s: %v", req.Language, err)
	}
	return res
}

func TestClusterRunsPythonAndBash(t *testing.T) {
	c := k8stest.Require(t)
	e, _ := testEngine(t, c, nil)
	for _, tt := range []struct{ lang, code, want string }{
		{"python", "import sys\nprint(sum(range(10)), sys.version_info.major)", "45 3\n"},
		{"bash", "echo \"$((6*7)) $(pwd)\"", "42 /workspace\n"},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			start := time.Now()
			res := run(t, e, engine.Request{Language: tt.lang, Code: tt.code})
			if res.Status != engine.StatusOK || res.Stdout != tt.want {
				t.Fatalf("status %s stdout %q stderr %q message %q; want ok %q", res.Status, res.Stdout, res.Stderr, res.ExitReason, tt.want)
			}
			t.Logf("cold %s run on Kubernetes: %s", tt.lang, time.Since(start))
		})
	}
}

// The hardening as the API server stored it (admission may change a pod)
// and as the program inside sees it.
func TestClusterPodIsHardenedInsideAndOut(t *testing.T) {
	c := k8stest.Require(t)
	b := c.Backend(t, nil)
	e := engine.New(k8stest.EngineConfig(), languages.Builtin(), b, nil)
	lang, _ := languages.Builtin().Lookup("bash")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	sb, err := b.Create(ctx, e.Template(lang))
	if err != nil {
		t.Fatal(err)
	}
	defer c.NoLeftovers(t, k8stest.Namespace, b.Owner())
	defer sb.Close()

	pod, err := c.Client.CoreV1().Pods(k8stest.Namespace).Get(ctx, sb.ID(), metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	spec := pod.Spec
	sc := spec.Containers[0].SecurityContext
	lim := spec.Containers[0].Resources
	for _, check := range []struct {
		name string
		ok   bool
	}{
		{"runs as uid/gid 10001, non-root", *spec.SecurityContext.RunAsUser == 10001 && *spec.SecurityContext.RunAsGroup == 10001 && *sc.RunAsNonRoot},
		{"read-only root file system", *sc.ReadOnlyRootFilesystem},
		{"drops ALL capabilities", len(sc.Capabilities.Drop) == 1 && sc.Capabilities.Drop[0] == "ALL" && len(sc.Capabilities.Add) == 0},
		{"no privilege escalation", !*sc.AllowPrivilegeEscalation},
		{"seccomp RuntimeDefault", sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault},
		{"no service account token", !*spec.AutomountServiceAccountToken && !hasTokenVolume(pod)},
		{"no service links", !*spec.EnableServiceLinks},
		{"no host namespaces", !spec.HostNetwork && !spec.HostPID && !spec.HostIPC},
		{"Guaranteed QoS (requests equal limits)", pod.Status.QOSClass == corev1.PodQOSGuaranteed && lim.Requests.Memory().Cmp(*lim.Limits.Memory()) == 0},
		{"restartPolicy Never with a deadline", spec.RestartPolicy == corev1.RestartPolicyNever && spec.ActiveDeadlineSeconds != nil},
	} {
		if !check.ok {
			t.Errorf("stored pod spec: not %s", check.name)
		}
	}

	node, err := c.Client.CoreV1().Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	probe := fmt.Sprintf(`echo "uid=$(id -u) gid=$(id -g)"
grep -E '^(CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp):' /proc/self/status
if touch /probe 2>/dev/null; then echo root=writable; else echo root=readonly; fi
if [ -e /var/run/secrets/kubernetes.io/serviceaccount ]; then echo token=present; else echo token=absent; fi
awk 'NR>1 && $2=="00000000" {print "default-route=" $1}' /proc/net/route
echo "interfaces=$(ls /sys/class/net | tr '\n' ' ')"
echo "nofile=$(ulimit -n) fsize=$(ulimit -f)"
if timeout 3 bash -c 'exec 3<>/dev/tcp/%s/%d' 2>/dev/null; then echo kubelet=reachable; else echo kubelet=unreachable; fi
`, pod.Status.HostIP, node.Status.DaemonEndpoints.KubeletEndpoint.Port)
	res, err := sb.Exec(ctx, sandbox.Job{Request: bashRequest(probe), Deadline: time.Minute}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Stages) == 0 {
		t.Fatalf("no stage ran: %+v", res)
	}
	out := string(res.Stages[0].Stdout)
	t.Logf("inside the pod:\n%s", out)
	for _, want := range []string{
		"uid=10001 gid=10001",
		"CapPrm:\t0000000000000000", "CapEff:\t0000000000000000", "CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000",
		"NoNewPrivs:\t1", "Seccomp:\t2",
		"root=readonly", "token=absent", "kubelet=unreachable",
		"nofile=1024 fsize=32768", // bash counts fsize in KiB: 32 MiB
	} {
		if !strings.Contains(out, want) {
			t.Errorf("inside the pod: want %q in\n%s", want, out)
		}
	}
	if strings.Contains(out, "default-route=") {
		t.Errorf("the pod has a default route:\n%s", out)
	}
}

func hasTokenVolume(p *corev1.Pod) bool {
	for _, v := range p.Spec.Volumes {
		if v.Projected != nil || strings.HasPrefix(v.Name, "kube-api-access") {
			return true
		}
	}
	return false
}

// bashRequest is a one-stage agent request running script with bash.
func bashRequest(script string) wire.Request {
	return wire.Request{
		Workdir:     "/workspace",
		OutputLimit: 1 << 20,
		Stages:      []wire.Stage{{Name: "run", Argv: []string{"bash", "-c", script}, TimeoutMs: 30000}},
	}
}

func TestClusterNamespaceRestrictedRefusesWeakerPods(t *testing.T) {
	c := k8stest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	weak := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "weak-"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "mcp-code-runner/base:1"}}},
	}
	_, err := c.Client.CoreV1().Pods(k8stest.Namespace).Create(ctx, weak, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "PodSecurity") {
		t.Fatalf("a pod without hardening was not refused by Pod Security in %s: %v", k8stest.Namespace, err)
	}
}

func TestClusterWarmPoolServesAndRefills(t *testing.T) {
	c := k8stest.Require(t)
	e, b := testEngine(t, c, func(cfg *config.Config) { cfg.Pool.Sizes = []string{"python=1"} })
	e.StartPool()
	idle := func() bool {
		for _, s := range e.PoolStats() {
			if s.Language == "python" {
				return s.Idle == 1
			}
		}
		return false
	}
	waitFor(t, "a warm python pod", 2*time.Minute, idle)
	served := c.PodsOf(t, k8stest.Namespace, b.Owner())
	start := time.Now()
	res := run(t, e, engine.Request{Language: "python", Code: "print(6*7)"})
	warm := time.Since(start)
	if res.Status != engine.StatusOK || res.Stdout != "42\n" {
		t.Fatalf("status %s stdout %q stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	t.Logf("warm python run on Kubernetes: %s", warm)
	waitFor(t, "the pool to refill", 2*time.Minute, func() bool {
		if !idle() {
			return false
		}
		now := c.PodsOf(t, k8stest.Namespace, b.Owner())
		return len(now) == 1 && now[0] != served[0]
	})
}

func TestClusterTimeoutAndCancellationKillThePod(t *testing.T) {
	c := k8stest.Require(t)
	e, _ := testEngine(t, c, nil)
	t.Run("timeout", func(t *testing.T) {
		res := run(t, e, engine.Request{Language: "bash", Code: "echo started; sleep 60", TimeoutSeconds: 2})
		if res.Status != engine.StatusTimeout || res.Stdout != "started\n" {
			t.Fatalf("status %s stdout %q; want timeout with the output before it", res.Status, res.Stdout)
		}
	})
	t.Run("cancellation", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		started := make(chan struct{}, 1)
		go func() {
			<-started
			cancel()
		}()
		begin := time.Now()
		res, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo started; sleep 60", TimeoutSeconds: 50},
			engine.RunOptions{OnChunk: func(ch sandbox.Chunk) {
				if strings.Contains(string(ch.Data), "started") {
					select {
					case started <- struct{}{}:
					default:
					}
				}
			}})
		if took := time.Since(begin); took > 40*time.Second {
			t.Fatalf("a cancelled run took %s", took)
		}
		if err == nil && res.Status != engine.StatusKilled {
			t.Fatalf("cancelled run: status %s; want killed (or an error)", res.Status)
		}
	})
}

func TestClusterSessionKeepsState(t *testing.T) {
	c := k8stest.Require(t)
	e, _ := testEngine(t, c, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	m := sessions.NewManager(e)
	defer m.Shutdown()
	s, err := m.Create(ctx, "python", 0, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := m.Run(ctx, engine.Request{SessionID: s.SessionID, Code: "x = 41\nopen('note.txt', 'w').write('kept')"}, engine.RunOptions{})
	if err != nil || first.Status != engine.StatusOK {
		t.Fatalf("first call: %v %+v", err, first)
	}
	second, err := m.Run(ctx, engine.Request{SessionID: s.SessionID, Code: "print(x + 1, open('note.txt').read())"}, engine.RunOptions{})
	if err != nil || second.Status != engine.StatusOK || second.Stdout != "42 kept\n" {
		t.Fatalf("second call: %v status %s stdout %q stderr %q", err, second.Status, second.Stdout, second.Stderr)
	}
}

// Every bad input answers within a bounded time with an error that says
// what to fix, and leaves no pod behind.
func TestClusterBadInputFailsFastAndCleanly(t *testing.T) {
	c := k8stest.Require(t)
	reg := languages.Builtin()
	bash, _ := reg.Lookup("bash")
	tpl := engine.New(k8stest.EngineConfig(), reg, c.Backend(t, nil), nil).Template(bash)

	quotaNS := k8stest.Namespace + "-quota"
	c.EnsureNamespace(t, quotaNS)
	fullQuota(t, c, quotaNS)

	tests := []struct {
		name    string
		edit    func(*kubernetes.Options)
		rest    func(*rest.Config)
		image   string
		wantIs  error
		wantMsg []string
	}{
		{name: "image missing on the node", image: "mcp-code-runner/not-there:0",
			wantIs: sandbox.ErrImageMissing, wantMsg: []string{"cannot be pulled", "ErrImageNeverPull", "images.sh import"}},
		{name: "agent image missing", edit: func(o *kubernetes.Options) { o.Pod.AgentImage = "localhost/mcp-code-runner/agent:missing" },
			wantIs: sandbox.ErrImageMissing, wantMsg: []string{"localhost/mcp-code-runner/agent:missing", "cannot be pulled"}},
		{name: "no node matches (stuck Pending)", edit: func(o *kubernetes.Options) {
			o.Pod.NodeSelector = map[string]string{"mcp-code-runner.io/no-such-node": "true"}
			o.StartTimeout = 3 * time.Second
		}, wantMsg: []string{"was not scheduled within 3s", "--kubernetes-node-selector"}},
		{name: "forbidden by RBAC", rest: func(rc *rest.Config) {
			rc.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + k8stest.Namespace + ":nobody"}
		}, wantIs: sandbox.ErrUnavailable, wantMsg: []string{"not allowed", "deploy/kubernetes/rbac.yaml"}},
		{name: "namespace over its quota", edit: func(o *kubernetes.Options) { o.Pod.Namespace = quotaNS },
			wantMsg: []string{"over its ResourceQuota", "raise the quota"}},
		{name: "API server unreachable", rest: func(rc *rest.Config) { rc.Host = "https://127.0.0.1:1" },
			wantIs: sandbox.ErrUnavailable, wantMsg: []string{"not reachable", "--kubernetes-kubeconfig"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := kubernetes.OptionsFrom(c.Config(), "gvisor", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tt.edit != nil {
				tt.edit(&opts)
			}
			rc := rest.CopyConfig(c.Rest)
			if tt.rest != nil {
				tt.rest(rc)
			}
			b, err := kubernetes.New(rc, opts)
			if err != nil {
				t.Fatal(err)
			}
			template := tpl
			if tt.image != "" {
				template.Image = tt.image
			}
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			start := time.Now()
			sb, err := b.Create(ctx, template)
			took := time.Since(start)
			if err == nil {
				sb.Close()
				t.Fatal("Create succeeded; want an error")
			}
			t.Logf("after %s: %v", took.Round(time.Millisecond), err)
			if took > 30*time.Second {
				t.Errorf("the error took %s; want a bounded, quick answer", took)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error is not %v", tt.wantIs)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error does not say %q", m)
				}
			}
			c.NoLeftovers(t, opts.Pod.Namespace, opts.Pod.Owner)
		})
	}
}

// fullQuota gives namespace ns a quota of no pods at all. The test cluster
// runs no quota controller, so the quota's status (what admission checks)
// is written here.
func fullQuota(t *testing.T, c *k8stest.Cluster, ns string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	quotas := c.Client.CoreV1().ResourceQuotas(ns)
	hard := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}
	q, err := quotas.Get(ctx, "no-pods", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		q, err = quotas.Create(ctx, &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "no-pods"}, Spec: corev1.ResourceQuotaSpec{Hard: hard}}, metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	q.Status = corev1.ResourceQuotaStatus{Hard: hard, Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")}}
	if _, err := quotas.UpdateStatus(ctx, q, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestClusterSweepDeletesPodsOfDeadServers(t *testing.T) {
	c := k8stest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// A pod made by a "server" whose process is gone: this host, a PID
	// that is no process's.
	dead := kubernetes.Owner{Owner: sandbox.Owner{ID: "gone", PID: 1 << 22, Start: "1"}}
	dead.Host = c.Backend(t, nil).Owner().Host
	dead.ID = fmt.Sprintf("%s/%d/%s", dead.Host, dead.PID, dead.Start)
	left := c.Backend(t, func(o *kubernetes.Options) { o.Pod.Owner = dead })
	reg := languages.Builtin()
	bash, _ := reg.Lookup("bash")
	sb, err := left.Create(ctx, engine.New(k8stest.EngineConfig(), reg, left, nil).Template(bash))
	if err != nil {
		t.Fatal(err)
	}
	_ = sb // left behind on purpose: its "server" is dead
	alive := c.Backend(t, nil)
	n, err := alive.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n < 1 {
		t.Fatalf("the sweep deleted %d pods; want the dead server's", n)
	}
	c.NoLeftovers(t, k8stest.Namespace, dead)
}

// A server stopping in a rolling update runs on through its Pod's grace
// period, finishing the runs it has in sandbox pods it may still be
// making: another server's sweep keeps them until the Pod is gone.
func TestClusterSweepKeepsThePodsOfAServerWhosePodIsStillStopping(t *testing.T) {
	c := k8stest.Require(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// The "server's Pod": bound to a node that does not exist, so nothing
	// runs it and a graceful deletion leaves it terminating until the
	// test deletes it for good.
	pods := c.Client.CoreV1().Pods(k8stest.Namespace)
	server, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "mcr-stopping-server-"},
		Spec: corev1.PodSpec{
			NodeName:                      "mcr-test-no-such-node",
			TerminationGracePeriodSeconds: new(int64(600)),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				RunAsUser:      new(int64(10001)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{Name: "server", Image: c.AgentImage, SecurityContext: &corev1.SecurityContext{
				AllowPrivilegeEscalation: new(false),
				Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
			}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gone := func() {
		if err := pods.Delete(context.Background(), server.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
	t.Cleanup(gone)
	// Its process is not on this host (a PID that is no process's): only
	// the Pod says whether it runs.
	stopping := kubernetes.Owner{Owner: sandbox.Owner{PID: 1 << 22, Start: "1"}, Pod: k8stest.Namespace + "/" + server.Name + "/" + string(server.UID)}
	stopping.Host = c.Backend(t, nil).Owner().Host
	stopping.ID = fmt.Sprintf("%s/%d/%s", stopping.Host, stopping.PID, stopping.Start)
	made := c.Backend(t, func(o *kubernetes.Options) { o.Pod.Owner = stopping })
	bash, _ := languages.Builtin().Lookup("bash")
	sb, err := made.Create(ctx, engine.New(k8stest.EngineConfig(), languages.Builtin(), made, nil).Template(bash))
	if err != nil {
		t.Fatal(err)
	}
	_ = sb // removed by the sweep once its server's Pod is gone
	if err := pods.Delete(ctx, server.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if p, err := pods.Get(ctx, server.Name, metav1.GetOptions{}); err != nil || p.DeletionTimestamp == nil {
		t.Fatalf("the server's Pod is not terminating (err %v): the test needs it to be", err)
	}
	if _, err := c.Backend(t, nil).Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if left := c.PodsOf(t, k8stest.Namespace, stopping); len(left) != 1 {
		t.Fatalf("after a sweep while its server's Pod is terminating, the server has sandbox pods %v; want its one pod kept", left)
	}
	gone()
	if _, err := c.Backend(t, nil).Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	c.NoLeftovers(t, k8stest.Namespace, stopping)
}

func waitFor(t *testing.T, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(limit); !cond(); time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", limit, what)
		}
	}
}
