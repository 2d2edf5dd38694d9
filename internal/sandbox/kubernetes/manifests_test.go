package kubernetes

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
)

// manifestsDir holds the manifests that deploy the server.
var manifestsDir = filepath.Join("..", "..", "..", "deploy", "kubernetes")

// Manifests decodes every object of deploy/kubernetes (the files the
// kustomization lists).
func Manifests(t testing.TB) []runtime.Object {
	t.Helper()
	var objs []runtime.Object
	for _, f := range []string{"namespaces.yaml", "rbac.yaml", "networkpolicy.yaml", "deployment.yaml", "service.yaml"} {
		data, err := os.ReadFile(filepath.Join(manifestsDir, f))
		if err != nil {
			t.Fatal(err)
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if len(bytes.TrimSpace(doc)) == 0 {
				continue
			}
			obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(doc, nil, nil)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			objs = append(objs, obj)
		}
	}
	return objs
}

func TestManifestsDeployTheServerWithLeastPrivilege(t *testing.T) {
	var (
		namespaces = map[string]*corev1.Namespace{}
		role       *rbacv1.Role
		binding    *rbacv1.RoleBinding
		policy     *networkingv1.NetworkPolicy
		deploy     *appsv1.Deployment
		service    *corev1.Service
	)
	for _, obj := range Manifests(t) {
		switch o := obj.(type) {
		case *corev1.Namespace:
			namespaces[o.Name] = o
		case *rbacv1.Role:
			if o.Namespace == "mcp-code-runner-sandboxes" {
				role = o
			} else if o.Namespace != "mcp-code-runner" || len(o.Rules) != 1 || !slices.Equal(o.Rules[0].Verbs, []string{"get"}) {
				t.Errorf("Role %s/%s grants more than reading the servers' own pods: %+v", o.Namespace, o.Name, o.Rules)
			}
		case *rbacv1.RoleBinding:
			if o.Namespace == "mcp-code-runner-sandboxes" {
				binding = o
			}
		case *networkingv1.NetworkPolicy:
			policy = o
		case *appsv1.Deployment:
			deploy = o
		case *corev1.Service:
			service = o
		case *corev1.ServiceAccount, *rbacv1.ClusterRole, *rbacv1.ClusterRoleBinding:
			if _, cluster := o.(*rbacv1.ClusterRole); cluster {
				t.Error("the manifests grant a ClusterRole; the server needs rights in the sandbox namespace only")
			}
		default:
			t.Errorf("unexpected object %T", obj)
		}
	}
	const sandboxNS = "mcp-code-runner-sandboxes"
	t.Run("the sandbox namespace enforces Pod Security restricted", func(t *testing.T) {
		ns := namespaces[sandboxNS]
		if ns == nil || ns.Labels["pod-security.kubernetes.io/enforce"] != "restricted" {
			t.Fatalf("namespace %s missing or not enforce=restricted: %+v", sandboxNS, ns)
		}
	})
	t.Run("the Role covers pods, attach, exec, log and network policies of the sandbox namespace, nothing else", func(t *testing.T) {
		if role == nil || role.Namespace != sandboxNS {
			t.Fatalf("no Role in %s", sandboxNS)
		}
		allowed := []string{"pods", "pods/attach", "pods/exec", "pods/log", "networkpolicies"}
		var got []string
		for _, r := range role.Rules {
			for _, res := range r.Resources {
				if !slices.Contains(allowed, res) {
					t.Errorf("the Role grants %s", res)
				}
				if slices.Contains(r.Verbs, "*") {
					t.Errorf("the Role grants every verb on %s", res)
				}
				got = append(got, res)
			}
		}
		for _, want := range allowed {
			if !slices.Contains(got, want) {
				t.Errorf("the Role does not grant %s", want)
			}
		}
		if binding == nil || binding.Namespace != sandboxNS || binding.RoleRef.Name != role.Name ||
			len(binding.Subjects) != 1 || binding.Subjects[0].Name != deploy.Spec.Template.Spec.ServiceAccountName {
			t.Errorf("the RoleBinding does not bind the Role to the server's ServiceAccount: %+v", binding)
		}
	})
	t.Run("the network policy is the one the server makes", func(t *testing.T) {
		want := NetworkPolicy(sandboxNS)
		if policy == nil || !equality.Semantic.DeepEqual(policy.Spec, want.Spec) || policy.Name != want.Name {
			t.Errorf("shipped policy %+v; want %+v", policy, want)
		}
	})
	t.Run("the server probes /healthz and /readyz and passes its Pod's identity", func(t *testing.T) {
		c := deploy.Spec.Template.Spec.Containers[0]
		if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
			t.Errorf("probes %+v %+v", c.LivenessProbe, c.ReadinessProbe)
		}
		env := map[string]bool{}
		for _, e := range c.Env {
			env[e.Name] = true
		}
		for _, name := range []string{"POD_NAME", "POD_UID", "POD_NAMESPACE", "MCR_AUTH_TOKEN"} {
			if !env[name] {
				t.Errorf("the server container lacks %s", name)
			}
		}
		if !slices.Contains(c.Args, "--backend=kubernetes") || !slices.Contains(c.Args, "--kubernetes-namespace="+sandboxNS) {
			t.Errorf("args %v", c.Args)
		}
	})
	t.Run("the Service selects the server", func(t *testing.T) {
		if service == nil || service.Spec.Selector["app.kubernetes.io/name"] != deploy.Spec.Template.Labels["app.kubernetes.io/name"] {
			t.Errorf("service %+v", service)
		}
	})
}
