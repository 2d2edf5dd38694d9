package kubernetes

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

var testTemplate = sandbox.Template{
	Image:     "mcp-code-runner/python:1",
	Resources: sandbox.Resources{MemoryMB: 256, CPUs: 0.5, PidsLimit: 128, WorkspaceMB: 64, TmpMB: 32, NoFile: 1024, FileSizeMB: 32},
	MaxLife:   10 * time.Minute,
	Purpose:   "python",
	Warm:      &wire.Warm{Name: "python_warm.py", Argv: []string{"python3", "-u", "-c", "{program}"}},
}

var testOptions = PodOptions{
	Namespace:          "sandboxes",
	AgentImage:         "localhost/mcp-code-runner/agent:1",
	EphemeralStorageMB: 128,
	Owner:              Owner{Owner: sandbox.Owner{ID: "host-a/42/1234", Host: "host-a", PID: 42, Start: "1234"}},
}

var testNow = time.Unix(1_800_000_000, 0)

// allContainers is the init container and the sandbox container.
func allContainers(p *corev1.Pod) []corev1.Container {
	return append(slices.Clone(p.Spec.InitContainers), p.Spec.Containers...)
}

func TestPodIsHardened(t *testing.T) {
	pod := Pod(testTemplate, testOptions, testNow)
	sandboxC := pod.Spec.Containers[0]
	checks := []struct {
		name string
		ok   func() bool
	}{
		{"the pod runs as non-root uid and gid 10001", func() bool {
			sc := pod.Spec.SecurityContext
			return *sc.RunAsNonRoot && *sc.RunAsUser == 10001 && *sc.RunAsGroup == 10001
		}},
		{"every container runs as non-root uid and gid 10001", func() bool {
			for _, c := range allContainers(pod) {
				sc := c.SecurityContext
				if !*sc.RunAsNonRoot || *sc.RunAsUser != 10001 || *sc.RunAsGroup != 10001 {
					return false
				}
			}
			return true
		}},
		{"every container has a read-only root file system", func() bool {
			for _, c := range allContainers(pod) {
				if !*c.SecurityContext.ReadOnlyRootFilesystem {
					return false
				}
			}
			return true
		}},
		{"every container drops all capabilities and adds none", func() bool {
			for _, c := range allContainers(pod) {
				caps := c.SecurityContext.Capabilities
				if !slices.Equal(caps.Drop, []corev1.Capability{"ALL"}) || len(caps.Add) != 0 {
					return false
				}
			}
			return true
		}},
		{"no container may escalate privileges or is privileged", func() bool {
			for _, c := range allContainers(pod) {
				if *c.SecurityContext.AllowPrivilegeEscalation || *c.SecurityContext.Privileged {
					return false
				}
			}
			return true
		}},
		{"seccomp is the runtime's default profile", func() bool {
			if pod.Spec.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
				return false
			}
			for _, c := range allContainers(pod) {
				if c.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
					return false
				}
			}
			return true
		}},
		{"no service account token is mounted", func() bool { return !*pod.Spec.AutomountServiceAccountToken }},
		{"no service links are put in the environment", func() bool { return !*pod.Spec.EnableServiceLinks }},
		{"no host namespace is shared", func() bool {
			return !pod.Spec.HostNetwork && !pod.Spec.HostPID && !pod.Spec.HostIPC && !*pod.Spec.ShareProcessNamespace
		}},
		{"no volume is a hostPath", func() bool {
			for _, v := range pod.Spec.Volumes {
				if v.HostPath != nil || v.EmptyDir == nil {
					return false
				}
			}
			return true
		}},
		{"requests equal limits for cpu, memory and ephemeral storage in every container", func() bool {
			for _, c := range allContainers(pod) {
				for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
					req, lim := c.Resources.Requests[name], c.Resources.Limits[name]
					if lim.IsZero() || req.Cmp(lim) != 0 {
						return false
					}
				}
			}
			return true
		}},
		{"the limits are the template's", func() bool {
			l := sandboxC.Resources.Limits
			return l.Cpu().Cmp(resource.MustParse("500m")) == 0 && l.Memory().Cmp(resource.MustParse("256Mi")) == 0 &&
				l.StorageEphemeral().Cmp(resource.MustParse("128Mi")) == 0
		}},
		{"/workspace and /tmp are memory volumes of the template's sizes", func() bool {
			want := map[string]string{WorkspacePath: "64Mi", "/tmp": "32Mi"}
			for _, m := range sandboxC.VolumeMounts {
				size, ok := want[m.MountPath]
				if !ok {
					continue
				}
				v := volume(pod, m.Name)
				if v == nil || v.EmptyDir.Medium != corev1.StorageMediumMemory || v.EmptyDir.SizeLimit.Cmp(resource.MustParse(size)) != 0 {
					return false
				}
				delete(want, m.MountPath)
			}
			return len(want) == 0
		}},
		{"the agent volume is read-only in the sandbox container", func() bool {
			for _, m := range sandboxC.VolumeMounts {
				if m.MountPath == AgentDir {
					return m.ReadOnly
				}
			}
			return false
		}},
		{"the pod is never restarted", func() bool { return pod.Spec.RestartPolicy == corev1.RestartPolicyNever }},
		{"activeDeadlineSeconds is the sandbox's life plus the margin", func() bool {
			return *pod.Spec.ActiveDeadlineSeconds == int64((10*time.Minute+expiryMargin)/time.Second)
		}},
		{"the sandbox container runs the agent on an attachable stdin, without a tty", func() bool {
			return slices.Equal(sandboxC.Command, []string{AgentPath}) && sandboxC.Stdin && sandboxC.StdinOnce && !sandboxC.TTY
		}},
		{"the init container installs the agent from the agent image", func() bool {
			ic := pod.Spec.InitContainers[0]
			return ic.Image == testOptions.AgentImage && slices.Equal(ic.Command, []string{"/agent", "install", AgentPath})
		}},
		{"the agent is told it is in a sandbox, and what to warm", func() bool {
			return envOf(sandboxC, wire.SandboxEnv) == "1" && strings.Contains(envOf(sandboxC, wire.WarmEnv), `"python3"`)
		}},
		{"the agent is given the open-files and file-size limits the Pod API cannot set", func() bool {
			return envOf(sandboxC, wire.LimitsEnv) == `{"nofile":1024,"fsize_bytes":33554432}`
		}},
		{"the labels select it for the sweep and the network policy", func() bool {
			return pod.Labels[LabelSandbox] == "true" && pod.Labels[LabelOwner] == testOptions.Owner.labelValue() &&
				pod.Labels[LabelPurpose] == "python" && pod.Labels[LabelManagedBy] == ManagedBy
		}},
		{"the annotations name the owner and the expiry", func() bool {
			return pod.Annotations[AnnotationOwner] == "host-a/42/1234" && pod.Annotations[AnnotationOwnerPID] == "42" &&
				pod.Annotations[AnnotationExpires] == "1800000720"
		}},
		{"without options there is no runtime class, node selector, toleration, pull secret or owner", func() bool {
			return pod.Spec.RuntimeClassName == nil && pod.Spec.NodeSelector == nil && pod.Spec.Tolerations == nil &&
				pod.Spec.ImagePullSecrets == nil && pod.OwnerReferences == nil
		}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !c.ok() {
				t.Errorf("pod spec violates: %s", c.name)
			}
		})
	}
}

func TestPodTakesTheOperatorsPlacementOptions(t *testing.T) {
	ref := &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "server-0", UID: "u-1", Controller: new(true)}
	o := testOptions
	o.RuntimeClassName = "gvisor"
	o.NodeSelector = map[string]string{"pool": "sandboxes"}
	o.Tolerations = []corev1.Toleration{{Key: "sandbox", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	o.ImagePullSecrets = []string{"registry"}
	o.ImagePullPolicy = corev1.PullNever
	o.OwnerReference = ref
	pod := Pod(testTemplate, o, testNow)
	tests := []struct {
		name string
		ok   bool
	}{
		{"runtimeClassName", pod.Spec.RuntimeClassName != nil && *pod.Spec.RuntimeClassName == "gvisor"},
		{"nodeSelector", pod.Spec.NodeSelector["pool"] == "sandboxes"},
		{"tolerations", len(pod.Spec.Tolerations) == 1 && pod.Spec.Tolerations[0].Key == "sandbox"},
		{"imagePullSecrets", len(pod.Spec.ImagePullSecrets) == 1 && pod.Spec.ImagePullSecrets[0].Name == "registry"},
		{"imagePullPolicy of both images", pod.Spec.Containers[0].ImagePullPolicy == corev1.PullNever && pod.Spec.InitContainers[0].ImagePullPolicy == corev1.PullNever},
		{"ownerReference to the server's pod", len(pod.OwnerReferences) == 1 && pod.OwnerReferences[0].UID == "u-1"},
	}
	for _, tt := range tests {
		if !tt.ok {
			t.Errorf("the option %s is not in the pod", tt.name)
		}
	}
}

func TestPodIsAdmittedByPodSecurityRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []PodOptions{testOptions, func() PodOptions { o := testOptions; o.RuntimeClassName = "gvisor"; return o }()} {
		pod := Pod(testTemplate, o, testNow)
		for _, r := range evaluator.EvaluatePod(psaapi.LevelVersion{Level: psaapi.LevelRestricted, Version: psaapi.LatestVersion()}, &pod.ObjectMeta, &pod.Spec) {
			if !r.Allowed {
				t.Errorf("Pod Security restricted refuses the sandbox pod: %s: %s", r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
	}
}

func TestGeneratedNamesAndLabelValuesAreValid(t *testing.T) {
	tests := []struct{ purpose, wantName, wantLabel string }{
		{"python", "mcr-python-", "python"},
		{"C++ (gcc)", "mcr-c-gcc-", "C-gcc"},
		{"", "mcr-sandbox-", ""},
		{strings.Repeat("x", 100), "mcr-" + strings.Repeat("x", 20) + "-", strings.Repeat("x", 63)},
	}
	for _, tt := range tests {
		tpl := testTemplate
		tpl.Purpose = tt.purpose
		pod := Pod(tpl, testOptions, testNow)
		if pod.GenerateName != tt.wantName || pod.Labels[LabelPurpose] != tt.wantLabel {
			t.Errorf("purpose %q: name %q label %q, want %q %q", tt.purpose, pod.GenerateName, pod.Labels[LabelPurpose], tt.wantName, tt.wantLabel)
		}
	}
}

func TestNetworkPolicyDeniesAllIngressAndEgressOfSandboxes(t *testing.T) {
	np := NetworkPolicy("sandboxes")
	if np.Namespace != "sandboxes" || np.Spec.PodSelector.MatchLabels[LabelSandbox] != "true" {
		t.Fatalf("policy selects %v in %q; want the sandbox label in the sandbox namespace", np.Spec.PodSelector.MatchLabels, np.Namespace)
	}
	if !slices.Contains(np.Spec.PolicyTypes, "Ingress") || !slices.Contains(np.Spec.PolicyTypes, "Egress") {
		t.Fatalf("policy types %v; want Ingress and Egress", np.Spec.PolicyTypes)
	}
	if len(np.Spec.Ingress) != 0 || len(np.Spec.Egress) != 0 {
		t.Fatal("policy allows some traffic; want none")
	}
	pod := Pod(testTemplate, testOptions, testNow)
	for k, v := range np.Spec.PodSelector.MatchLabels {
		if pod.Labels[k] != v {
			t.Fatalf("policy does not select sandbox pods (label %s=%s)", k, v)
		}
	}
}

func volume(p *corev1.Pod, name string) *corev1.Volume {
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Name == name {
			return &p.Spec.Volumes[i]
		}
	}
	return nil
}

func envOf(c corev1.Container, name string) string {
	for _, e := range c.Env {
		if e.Name == name {
			return e.Value
		}
	}
	return ""
}
