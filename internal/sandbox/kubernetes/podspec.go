package kubernetes

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Labels on every sandbox pod: the sweep and the NetworkPolicy select on
// them. Label values are restricted (63 characters of [A-Za-z0-9._-]), so
// the owner's identity itself is in annotations, and its label is a digest.
const (
	LabelSandbox   = "mcp-code-runner.io/sandbox"
	LabelOwner     = "mcp-code-runner.io/owner"
	LabelPurpose   = "mcp-code-runner.io/purpose"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	ManagedBy      = "mcp-code-runner"
)

// Annotations on every sandbox pod.
const (
	AnnotationOwner     = "mcp-code-runner.io/owner-id"
	AnnotationOwnerHost = "mcp-code-runner.io/owner-host"
	AnnotationOwnerPID  = "mcp-code-runner.io/owner-pid"
	AnnotationOwnerBoot = "mcp-code-runner.io/owner-start"
	AnnotationOwnerPod  = "mcp-code-runner.io/owner-pod"
	AnnotationExpires   = "mcp-code-runner.io/expires"
	// AnnotationInstance is the server within its process that the pod is
	// made for (sandbox.Template.Instance): its shutdown removes its own.
	AnnotationInstance = "mcp-code-runner.io/instance"
)

// Names and paths inside every sandbox pod.
const (
	ContainerName     = "sandbox"
	InitContainerName = "install-agent"
	AgentDir          = "/opt/mcp-code-runner"
	AgentPath         = AgentDir + "/agent"
	WorkspacePath     = wire.WorkspacePath
	// SandboxUID is the user and group every sandbox process runs as.
	SandboxUID = wire.SandboxUID
	// NetworkPolicyName names the policy that cuts sandbox pods off.
	NetworkPolicyName = "mcp-code-runner-sandboxes-deny-all"
)

// expiryMargin is added to a sandbox's life for activeDeadlineSeconds and
// its expiry annotation: past it the kubelet kills the pod, and any
// server's sweep deletes it.
const expiryMargin = 2 * time.Minute

// PodOptions are the operator's settings that shape every sandbox pod.
type PodOptions struct {
	// Namespace is where sandbox pods are made.
	Namespace string
	// AgentImage holds the static agent at /agent; an init container copies
	// it into a volume the sandbox container runs it from.
	AgentImage string
	// ImagePullPolicy applies to the runtime and agent images ("" means the
	// cluster's default: IfNotPresent for tagged images).
	ImagePullPolicy corev1.PullPolicy
	// RuntimeClassName selects a RuntimeClass (gVisor, Kata), if set.
	RuntimeClassName string
	// GVisorRuntimeClassName is the RuntimeClass of templates of isolation
	// gvisor (its handler runsc in the nodes' container runtime); "" makes
	// the backend refuse them.
	GVisorRuntimeClassName string
	// NodeSelector, Tolerations and ImagePullSecrets are copied into every pod.
	NodeSelector     map[string]string
	Tolerations      []corev1.Toleration
	ImagePullSecrets []string
	// EphemeralStorageMB bounds the pod's disk: the agent copy and the
	// container log (the workspace and /tmp are memory).
	EphemeralStorageMB int
	// Owner identifies the server that makes the pods.
	Owner Owner
	// OwnerReference, when the server runs in a Pod, makes that Pod the
	// sandbox pods' owner, so that Kubernetes deletes them with it.
	OwnerReference *metav1.OwnerReference
}

// Owner identifies a server process in pod labels and annotations, so that
// a later server can tell whether the one that made a pod is still alive.
type Owner struct {
	sandbox.Owner
	// Pod is namespace/name/uid of the server's Pod when it runs in one.
	Pod string
}

// labelValue is the owner's identity as a label value.
func (o Owner) labelValue() string { return digest(o.ID) }

// Pod returns the hardened pod of a sandbox made from t, at now. It is a
// pure function, so tests can read every control back.
//
// The controls, and why:
//   - the pod and both containers run as uid/gid 10001, non-root, without
//     privilege escalation, with every capability dropped, the runtime's
//     default seccomp profile and a read-only root file system: what the
//     Pod Security "restricted" level admits, and what the Docker backend
//     does;
//   - no service account token, no service links, no host namespaces, no
//     hostPath: nothing in the pod names or reaches the cluster;
//   - requests equal limits for CPU, memory and ephemeral storage
//     (Guaranteed QoS: the sandbox gets what it is promised, no more);
//   - /workspace and /tmp are memory (emptyDir medium Memory) bounded by
//     size, counted in the memory limit as Docker's tmpfs are;
//   - restartPolicy Never and activeDeadlineSeconds: a sandbox runs once and
//     the kubelet kills it past its life whatever the server does;
//   - the agent comes from its own image through an init container, so the
//     runtime images stay as they are; the sandbox container runs it as its
//     first process, serving the framed protocol on its attached stdin and
//     stdout.
func Pod(t sandbox.Template, o PodOptions, now time.Time) *corev1.Pod {
	r := t.Resources
	life := t.MaxLife + expiryMargin
	deadline := int64(math.Ceil(life.Seconds()))
	expires := now.Add(life).Unix()
	limits := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(int64(math.Round(r.CPUs*1000)), resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(int64(r.MemoryMB)<<20, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(int64(max(o.EphemeralStorageMB, 1))<<20, resource.BinarySI),
	}
	env := []corev1.EnvVar{
		{Name: wire.SandboxEnv, Value: "1"},
		{Name: "HOME", Value: "/tmp"},
		{Name: "PATH", Value: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"},
		// The Pod API sets no open-files or file-size limit: the agent
		// applies them to itself at boot, before anything else runs.
		{Name: wire.LimitsEnv, Value: jsonString(wire.Limits{NoFile: r.NoFile, FileSizeBytes: int64(r.FileSizeMB) << 20})},
	}
	if t.Prestart != nil {
		env = append(env, corev1.EnvVar{Name: wire.PrestartEnv, Value: jsonString(t.Prestart)})
	}
	if t.Warm != nil {
		env = append(env, corev1.EnvVar{Name: wire.WarmEnv, Value: jsonString(t.Warm)})
	}
	pod := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "mcr-" + namePart(t.Purpose) + "-",
			Namespace:    o.Namespace,
			Labels:       SandboxLabels(o.Owner, t.Purpose),
			Annotations: map[string]string{
				AnnotationOwner:     o.Owner.ID,
				AnnotationOwnerHost: o.Owner.Host,
				AnnotationOwnerPID:  strconv.Itoa(o.Owner.PID),
				AnnotationOwnerBoot: o.Owner.Start,
				AnnotationExpires:   strconv.FormatInt(expires, 10),
				AnnotationInstance:  t.Instance,
			},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			ActiveDeadlineSeconds:         &deadline,
			TerminationGracePeriodSeconds: new(int64(0)),
			AutomountServiceAccountToken:  new(false),
			EnableServiceLinks:            new(false),
			HostNetwork:                   false,
			HostPID:                       false,
			HostIPC:                       false,
			ShareProcessNamespace:         new(false),
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   new(true),
				RunAsUser:      new(int64(SandboxUID)),
				RunAsGroup:     new(int64(SandboxUID)),
				FSGroup:        new(int64(SandboxUID)),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			NodeSelector: o.NodeSelector,
			Tolerations:  o.Tolerations,
			InitContainers: []corev1.Container{{
				Name:            InitContainerName,
				Image:           o.AgentImage,
				ImagePullPolicy: o.ImagePullPolicy,
				Command:         []string{"/agent", "install", AgentPath},
				SecurityContext: containerSecurity(),
				Resources:       corev1.ResourceRequirements{Requests: limits, Limits: limits},
				VolumeMounts:    []corev1.VolumeMount{{Name: "agent", MountPath: AgentDir}},
			}},
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           t.Image,
				ImagePullPolicy: o.ImagePullPolicy,
				Command:         []string{AgentPath},
				WorkingDir:      WorkspacePath,
				Env:             env,
				Stdin:           true,
				StdinOnce:       true,
				TTY:             false,
				SecurityContext: containerSecurity(),
				Resources:       corev1.ResourceRequirements{Requests: limits, Limits: limits},
				VolumeMounts: []corev1.VolumeMount{
					{Name: "workspace", MountPath: WorkspacePath},
					{Name: "tmp", MountPath: "/tmp"},
					{Name: "agent", MountPath: AgentDir, ReadOnly: true},
				},
			}},
			Volumes: []corev1.Volume{
				memoryVolume("workspace", r.WorkspaceMB),
				memoryVolume("tmp", r.TmpMB),
				{Name: "agent", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
					SizeLimit: resource.NewQuantity(agentVolumeMB<<20, resource.BinarySI),
				}}},
			},
		},
	}
	if o.Owner.Pod != "" {
		pod.Annotations[AnnotationOwnerPod] = o.Owner.Pod
	}
	if o.RuntimeClassName != "" {
		pod.Spec.RuntimeClassName = new(o.RuntimeClassName)
	}
	if t.Isolation.Or() == sandbox.IsolationGVisor {
		pod.Spec.RuntimeClassName = new(o.GVisorRuntimeClassName)
	}
	for _, s := range o.ImagePullSecrets {
		pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s})
	}
	if o.OwnerReference != nil {
		pod.OwnerReferences = []metav1.OwnerReference{*o.OwnerReference}
	}
	return pod
}

// agentVolumeMB bounds the volume the agent is copied into.
const agentVolumeMB = 64

// SandboxLabels are the labels of a sandbox pod of owner made for purpose.
func SandboxLabels(owner Owner, purpose string) map[string]string {
	return map[string]string{
		LabelSandbox:   "true",
		LabelManagedBy: ManagedBy,
		LabelOwner:     owner.labelValue(),
		LabelPurpose:   labelValue(purpose),
	}
}

// NetworkPolicy denies every sandbox pod in namespace all ingress and all
// egress: a policy that selects pods for both directions and allows
// nothing. (It needs a network plugin that enforces policies; the sandbox
// pods open no ports and need no network either way.)
func NetworkPolicy(namespace string) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{
		TypeMeta: metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      NetworkPolicyName,
			Namespace: namespace,
			Labels:    map[string]string{LabelManagedBy: ManagedBy},
		},
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{LabelSandbox: "true"}},
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress},
		},
	}
}

func containerSecurity() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		RunAsNonRoot:             new(true),
		RunAsUser:                new(int64(SandboxUID)),
		RunAsGroup:               new(int64(SandboxUID)),
		AllowPrivilegeEscalation: new(false),
		Privileged:               new(false),
		ReadOnlyRootFilesystem:   new(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		ProcMount:                new(corev1.DefaultProcMount),
	}
}

func memoryVolume(name string, sizeMB int) corev1.Volume {
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{
		Medium:    corev1.StorageMediumMemory,
		SizeLimit: resource.NewQuantity(int64(sizeMB)<<20, resource.BinarySI),
	}}}
}

func jsonString(v any) string {
	b, _ := json.Marshal(v) // plain structs of strings: cannot fail
	return string(b)
}

var notLabelChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// labelValue makes s a valid label value: at most 63 characters of
// [A-Za-z0-9._-], starting and ending with an alphanumeric.
func labelValue(s string) string {
	s = notLabelChars.ReplaceAllString(s, "-")
	if len(s) > 63 {
		s = s[:63]
	}
	return strings.Trim(s, "._-")
}

// namePart makes s usable inside a generated pod name (lower-case DNS label).
func namePart(s string) string {
	s = strings.ToLower(labelValue(s))
	s = strings.NewReplacer(".", "-", "_", "-").Replace(s)
	if len(s) > 20 {
		s = s[:20]
	}
	if s = strings.Trim(s, "-"); s == "" {
		return "sandbox"
	}
	return s
}
