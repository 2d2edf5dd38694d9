// Package k8stest gives tests the real Kubernetes cluster that `make
// k8s-up` starts (scripts/k8s): its kubeconfig in MCR_KUBECONFIG and the
// agent image in MCR_K8S_AGENT_IMAGE (the Makefile sets both when the
// cluster is up). Tests that need it fail, never skip, when CI=true.
package k8stest

import (
	"context"
	"fmt"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kclient "k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/kubernetes"
)

// Namespace is where the tests' sandbox pods go. It is labelled for the
// Pod Security "restricted" level, so every test also proves the pods are
// admitted there. It is kept between runs: the test cluster runs no
// namespace controller to finish deleting it.
const Namespace = "mcp-code-runner-test"

// Cluster is the test cluster.
type Cluster struct {
	Kubeconfig string
	AgentImage string
	Rest       *rest.Config
	Client     kclient.Interface
}

// Require returns the test cluster, or skips the test when none is
// configured, except under CI=true, where it fails.
func Require(t testing.TB) *Cluster {
	t.Helper()
	kubeconfig, image := os.Getenv("MCR_KUBECONFIG"), os.Getenv("MCR_K8S_AGENT_IMAGE")
	if kubeconfig == "" || image == "" {
		msg := "no test cluster: run `make k8s-up`, then the tests with MCR_KUBECONFIG and MCR_K8S_AGENT_IMAGE set (`make test-k8s` sets them)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg + " (required under CI=true)")
		}
		t.Skip(msg)
	}
	rc, err := kubernetes.RESTConfig(config.Kubernetes{Kubeconfig: kubeconfig})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kclient.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	c := &Cluster{Kubeconfig: kubeconfig, AgentImage: image, Rest: rc, Client: cs}
	if err := c.ensureNamespace(Namespace, nil); err != nil {
		t.Fatalf("preparing the test namespace (is the cluster up? make k8s-up): %v", err)
	}
	return c
}

// ensureNamespace makes namespace ns if it is missing, labelled for Pod
// Security "restricted" plus extra, with the default ServiceAccount that
// pod admission looks for (the test cluster has no controller making it).
func (c *Cluster) ensureNamespace(ns string, extra map[string]string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	labels := map[string]string{
		"pod-security.kubernetes.io/enforce":         "restricted",
		"pod-security.kubernetes.io/enforce-version": "latest",
	}
	maps.Copy(labels, extra)
	_, err := c.Client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	_, err = c.Client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// EnsureNamespace is ensureNamespace for tests that need a namespace of
// their own.
func (c *Cluster) EnsureNamespace(t testing.TB, ns string) {
	t.Helper()
	if err := c.ensureNamespace(ns, nil); err != nil {
		t.Fatal(err)
	}
}

// Config returns the kubernetes settings of the test cluster.
func (c *Cluster) Config() config.Kubernetes {
	k := config.Default().Kubernetes
	k.Kubeconfig = c.Kubeconfig
	k.Namespace = Namespace
	k.AgentImage = c.AgentImage
	// The test cluster has no registry: images are imported into its
	// containerd, and a missing one must fail at once.
	k.ImagePullPolicy = "Never"
	return k
}

// Backend returns the kubernetes backend on the test cluster; edit, if
// set, changes its options first.
func (c *Cluster) Backend(t testing.TB, edit func(*kubernetes.Options)) *kubernetes.Backend {
	t.Helper()
	opts, err := kubernetes.OptionsFrom(c.Config(), "gvisor", nil)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(&opts)
	}
	b, err := kubernetes.New(c.Rest, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// PodsOf returns the names of the sandbox pods in namespace ns whose owner
// label is owner's.
func (c *Cluster) PodsOf(t testing.TB, ns string, owner kubernetes.Owner) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	sel := kubernetes.SandboxLabels(owner, "")
	list, err := c.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{
		LabelSelector: fmt.Sprintf("%s=true,%s=%s", kubernetes.LabelSandbox, kubernetes.LabelOwner, sel[kubernetes.LabelOwner]),
	})
	if err != nil {
		t.Fatalf("listing sandbox pods: %v", err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

// NoLeftovers fails the test if a sandbox pod of owner is still in ns a
// few seconds after the runs (deletion happens after a run answers).
func (c *Cluster) NoLeftovers(t testing.TB, ns string, owner kubernetes.Owner) {
	t.Helper()
	var left []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if left = c.PodsOf(t, ns, owner); len(left) == 0 {
			return
		}
	}
	t.Errorf("sandbox pods left behind: %s", strings.Join(left, ", "))
}

// SandboxCPUs is the CPU share of the tests' sandbox pods. A pod requests
// what it is limited to, and the test node has two cores: at a quarter core
// each, the tests' pools and cold runs fit beside each other (and beside a
// bench on the same cluster) instead of waiting in Pending.
const SandboxCPUs = 0.25

// EngineConfig is the default configuration with the tests' CPU share.
func EngineConfig() config.Config {
	c := config.Default()
	c.Limits.CPUs = SandboxCPUs
	return c
}
