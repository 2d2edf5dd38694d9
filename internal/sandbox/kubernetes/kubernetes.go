// Package kubernetes is the Kubernetes sandbox backend: every sandbox is a
// hardened Pod (see Pod) in the sandbox namespace, its agent the sandbox
// container's first process, reached through the API server by attaching
// to that container's stdin and stdout. The pod is deleted afterwards
// whatever happens; a dead server's pods are deleted by the sweep of a
// later one, or by Kubernetes itself through their ownerReference.
//
// Why attach rather than exec: the agent must be the container's first
// process (it reaps orphans, and makes itself non-dumpable before the
// program starts, so that the program cannot forge its frames), and it
// already serves the framed protocol on its standard streams, as the
// Docker backend's fallback does. An exec would start a second process
// per sandbox (a runc exec, tens of milliseconds) that is not PID 1. The
// attach is opened once per sandbox, while the pod waits in the pool, so
// a warm run pays only the round trips of its frames. The cost: the
// container's standard output also goes to the node's container log
// (bounded by the kubelet's log rotation and by the pod's ephemeral
// storage).
package kubernetes

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Options configure the backend.
type Options struct {
	// Pod shapes every sandbox pod.
	Pod PodOptions
	// StartTimeout bounds the wait for a pod to run: scheduling, image
	// pull, the agent's installation and start.
	StartTimeout time.Duration
	// Logger receives the backend's logs.
	Logger *slog.Logger
}

// Backend runs sandboxes as Pods.
type Backend struct {
	cs     kubernetes.Interface
	rest   *rest.Config
	opts   Options
	log    *slog.Logger
	server string // the API server's URL, for messages

	policyOnce sync.Once
}

var _ sandbox.Backend = (*Backend)(nil)

// RESTConfig returns the client configuration of cfg: the kubeconfig file
// and context it names, or the in-cluster configuration when it names none
// and the server runs in a Pod, or else $KUBECONFIG or ~/.kube/config.
func RESTConfig(cfg config.Kubernetes) (*rest.Config, error) {
	if cfg.Kubeconfig == "" && cfg.Context == "" && os.Getenv("KUBERNETES_SERVICE_HOST") != "" {
		rc, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("kubernetes backend: in-cluster configuration: %w", err)
		}
		return rc, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if cfg.Kubeconfig != "" {
		rules.ExplicitPath = cfg.Kubeconfig
	}
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: cfg.Context})
	rc, err := cc.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: loading the kubeconfig (set --kubernetes-kubeconfig and --kubernetes-context, or $KUBECONFIG): %w", err)
	}
	return rc, nil
}

// OptionsFrom returns the backend options of the operator's configuration.
// When the server runs in a Pod of the sandbox namespace (POD_NAME,
// POD_UID and POD_NAMESPACE set through the downward API), that Pod owns
// the sandbox pods. (An ownerReference cannot cross namespaces: a server
// elsewhere relies on the sweep.)
func OptionsFrom(cfg config.Kubernetes, gvisorClass string, log *slog.Logger) (Options, error) {
	selector, err := cfg.NodeSelectorMap()
	if err != nil {
		return Options{}, err
	}
	tolerations, err := cfg.ParsedTolerations()
	if err != nil {
		return Options{}, err
	}
	if cfg.AgentImage == "" {
		return Options{}, errors.New("kubernetes backend: set the agent image (--kubernetes-agent-image): an image holding the static agent at /agent, built from deploy/kubernetes/agent.Dockerfile (`make k8s-images` makes one for the test cluster)")
	}
	o := PodOptions{
		Namespace:              cfg.Namespace,
		AgentImage:             cfg.AgentImage,
		ImagePullPolicy:        corev1.PullPolicy(cfg.ImagePullPolicy),
		RuntimeClassName:       cfg.RuntimeClassName,
		GVisorRuntimeClassName: gvisorClass,
		NodeSelector:           selector,
		ImagePullSecrets:       cfg.ImagePullSecrets,
		EphemeralStorageMB:     cfg.EphemeralStorageMB,
		Owner:                  CurrentOwner(),
	}
	for _, t := range tolerations {
		tol := corev1.Toleration{Key: t.Key, Value: t.Value, Effect: corev1.TaintEffect(t.Effect), Operator: corev1.TolerationOpEqual}
		if t.Exists {
			tol.Operator = corev1.TolerationOpExists
		}
		o.Tolerations = append(o.Tolerations, tol)
	}
	name, uid, ns := os.Getenv("POD_NAME"), os.Getenv("POD_UID"), os.Getenv("POD_NAMESPACE")
	if name != "" && uid != "" {
		o.Owner.Pod = ns + "/" + name + "/" + uid
		if ns == cfg.Namespace {
			o.OwnerReference = &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: types.UID(uid)}
		} else if log != nil {
			log.Info("sandbox pods carry no ownerReference: the server's Pod is in another namespace; the sweep deletes the pods of servers that are gone",
				"server_namespace", ns, "sandbox_namespace", cfg.Namespace)
		}
	}
	return Options{Pod: o, StartTimeout: time.Duration(cfg.StartTimeoutSeconds) * time.Second, Logger: log}, nil
}

// New returns a backend using the cluster rc reaches.
func New(rc *rest.Config, opts Options) (*Backend, error) {
	if opts.Pod.Namespace == "" {
		return nil, errors.New("kubernetes backend: the sandbox namespace is required")
	}
	if opts.Pod.AgentImage == "" {
		return nil, errors.New("kubernetes backend: the agent image is required")
	}
	if opts.StartTimeout <= 0 {
		opts.StartTimeout = time.Minute
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	// client-go reports through klog what this backend handles itself
	// (an attach stream closed when its sandbox goes is not an error).
	klog.SetLogger(logr.Discard())
	rc = rest.CopyConfig(rc)
	// A pool refill creates several pods at once, each watched and attached.
	rc.QPS, rc.Burst = 50, 100
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("kubernetes backend: %w", err)
	}
	return &Backend{cs: cs, rest: rc, opts: opts, log: opts.Logger, server: rc.Host}, nil
}

// Clientset returns the client the backend uses.
func (b *Backend) Clientset() kubernetes.Interface { return b.cs }

// Namespace returns the sandbox namespace.
func (b *Backend) Namespace() string { return b.opts.Pod.Namespace }

// Owner returns this server's identity in pod labels and annotations.
func (b *Backend) Owner() Owner { return b.opts.Pod.Owner }

// PodOptions returns what shapes every sandbox pod.
func (b *Backend) PodOptions() PodOptions { return b.opts.Pod }

// Close releases nothing: pods are deleted by their sandboxes' Close.
func (b *Backend) Close() error { return nil }

// Check reports whether the API server answers and whether this server
// may make, attach to and delete pods in the sandbox namespace.
func (b *Backend) Check(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := b.cs.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx); err != nil {
		return fmt.Errorf("%w: the Kubernetes API server at %s is not reachable (%v): check --kubernetes-kubeconfig/--kubernetes-context, or the in-cluster network", sandbox.ErrUnavailable, b.server, err)
	}
	ns := b.opts.Pod.Namespace
	for _, want := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "create", Resource: "pods"},
		{Namespace: ns, Verb: "delete", Resource: "pods"},
		{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "attach"},
	} {
		review, err := b.cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx,
			&authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &want}}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("%w: asking the API server at %s what this server may do: %v", sandbox.ErrUnavailable, b.server, err)
		}
		if !review.Status.Allowed {
			what := want.Resource
			if want.Subresource != "" {
				what += "/" + want.Subresource
			}
			return fmt.Errorf("%w: this server may not %s %s in namespace %s: bind it to the Role of deploy/kubernetes/rbac.yaml (pods, pods/attach, pods/exec, pods/log, networkpolicies in the sandbox namespace)",
				sandbox.ErrUnavailable, want.Verb, what, ns)
		}
	}
	return nil
}

// CheckImage answers nil: images live on the nodes (or in a registry they
// pull from), which the API server does not list; a missing image shows
// as ErrImageMissing when a pod cannot pull it.
func (b *Backend) CheckImage(context.Context, string) error { return nil }

// Architecture answers "": a pod runs on whichever node the scheduler
// picks, and a cluster's nodes may differ.
func (b *Backend) Architecture(context.Context) string { return "" }

// ensureNetworkPolicy makes the deny-all policy of sandbox pods if the
// namespace lacks it (the manifests ship it too). A server that may not
// read or make policies says so once and goes on: the policy is the
// cluster's to enforce either way.
func (b *Backend) ensureNetworkPolicy(ctx context.Context) {
	b.policyOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		np := NetworkPolicy(b.opts.Pod.Namespace)
		_, err := b.cs.NetworkingV1().NetworkPolicies(np.Namespace).Get(ctx, np.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			_, err = b.cs.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{})
			if err == nil {
				b.log.Info("made the network policy that cuts sandbox pods off", "namespace", np.Namespace, "name", np.Name)
			}
		}
		if err != nil && !apierrors.IsAlreadyExists(err) {
			b.log.Warn("could not check or make the sandbox pods' network policy; apply deploy/kubernetes/networkpolicy.yaml", "err", err)
		}
	})
}

// classify turns an API error about a sandbox pod into one that says what
// to fix.
func (b *Backend) classify(err error, what string) error {
	ns := b.opts.Pod.Namespace
	switch {
	case err == nil:
		return nil
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
		return fmt.Errorf("%s: namespace %s is over its ResourceQuota (%v): raise the quota, or lower the sandbox limits or the pool sizes", what, ns, err)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "PodSecurity"):
		return fmt.Errorf("%s: the namespace's Pod Security admission refuses the sandbox pod (%v): the pods meet the \"restricted\" level; check the namespace's labels and any other admission policy", what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%w: %s: this server is not allowed to (%v): bind it to the Role of deploy/kubernetes/rbac.yaml in namespace %s", sandbox.ErrUnavailable, what, err, ns)
	case apierrors.IsNotFound(err) && strings.Contains(err.Error(), "namespaces"):
		return fmt.Errorf("%w: %s: namespace %s does not exist: apply deploy/kubernetes (kubectl apply -k deploy/kubernetes) or set --kubernetes-namespace", sandbox.ErrUnavailable, what, ns)
	case apierrors.IsUnauthorized(err):
		return fmt.Errorf("%w: %s: the API server at %s does not accept this server's credentials (%v): check the kubeconfig", sandbox.ErrUnavailable, what, b.server, err)
	case apierrors.IsTimeout(err), apierrors.IsServerTimeout(err), apierrors.IsTooManyRequests(err), apierrors.IsInternalError(err), apierrors.IsServiceUnavailable(err):
		return fmt.Errorf("%w: %s: the API server at %s is overloaded or failing (%v)", sandbox.ErrUnavailable, what, b.server, err)
	case isConnectionError(err):
		return fmt.Errorf("%w: %s: the Kubernetes API server at %s is not reachable (%v): check --kubernetes-kubeconfig/--kubernetes-context, or the in-cluster network", sandbox.ErrUnavailable, what, b.server, err)
	default:
		return fmt.Errorf("%s: %w", what, err)
	}
}

// isConnectionError reports whether err is a failure to reach the API
// server at all (refused, unreachable, TLS), as opposed to an API status.
func isConnectionError(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false
	}
	msg := err.Error()
	for _, s := range []string{"connection refused", "no such host", "i/o timeout", "network is unreachable", "connection reset", "dial tcp", "tls:", "x509:", "EOF"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// deletePod deletes a sandbox pod at once (grace period 0), with a fresh
// context: the run's own may have ended, and the pod must go regardless.
func (b *Backend) deletePod(name string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for attempt := range 3 {
		err := b.cs.CoreV1().Pods(b.opts.Pod.Namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		if err == nil || apierrors.IsNotFound(err) {
			return
		}
		b.log.Warn("deleting sandbox pod", "pod", name, "attempt", attempt+1, "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Duration(attempt+1) * 200 * time.Millisecond):
		}
	}
	// The sweep deletes it once its expiry passes; the kubelet kills it at
	// its activeDeadlineSeconds.
}

// Sweep deletes the sandbox pods of servers that are gone, and any past
// its expiry whoever made it.
func (b *Backend) Sweep(ctx context.Context) (int, error) {
	list, err := b.cs.CoreV1().Pods(b.opts.Pod.Namespace).List(ctx, metav1.ListOptions{LabelSelector: LabelSandbox + "=true"})
	if err != nil {
		return 0, b.classify(err, "listing sandbox pods")
	}
	own := b.opts.Pod.Owner
	now := time.Now().Unix()
	removed := 0
	for _, p := range list.Items {
		if p.Labels[LabelOwner] == own.labelValue() {
			continue // ours: deleted by the run or the pool that made it
		}
		expires, _ := strconv.ParseInt(p.Annotations[AnnotationExpires], 10, 64)
		expired := expires > 0 && now > expires
		if !expired && b.ownerAlive(ctx, p.Annotations) {
			continue
		}
		err := b.cs.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))})
		if err != nil && !apierrors.IsNotFound(err) {
			b.log.Warn("deleting left-behind sandbox pod", "pod", p.Name, "err", err)
			continue
		}
		removed++
		b.log.Info("deleted left-behind sandbox pod", "pod", p.Name, "owner", p.Annotations[AnnotationOwner], "expired", expired)
	}
	return removed, nil
}

// ownerAlive reports whether the server that made a pod still runs: a
// server in a Pod is alive while that Pod is (when this server may read
// it); one outside the cluster, while its process on this host is.
//
// A Pod being deleted still runs until its deletion timestamp (the end of
// its grace period, when the kubelet kills it): a server stopping in a
// rolling update finishes the runs it has in that time, in the sandbox
// pods it has and those it still makes, and removes them itself.
func (b *Backend) ownerAlive(ctx context.Context, annotations map[string]string) bool {
	if ref := annotations[AnnotationOwnerPod]; ref != "" {
		parts := strings.Split(ref, "/")
		if len(parts) == 3 {
			p, err := b.cs.CoreV1().Pods(parts[0]).Get(ctx, parts[1], metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				return false
			case err == nil:
				return string(p.UID) == parts[2] && stillRunning(p, time.Now())
			}
		}
		return true // cannot tell: the expiry decides
	}
	return b.opts.Pod.Owner.alive(annotations)
}

// stillRunning reports whether pod p may still run at now: it is not being
// deleted, or its grace period has not ended.
func stillRunning(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp == nil || now.Before(p.DeletionTimestamp.Time)
}

// RemoveOwn deletes every sandbox pod this process made for instance; it
// is for a server's shutdown, after the runs in flight have ended.
func (b *Backend) RemoveOwn(ctx context.Context, instance string) (int, error) {
	pods := b.cs.CoreV1().Pods(b.opts.Pod.Namespace)
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: LabelOwner + "=" + b.opts.Pod.Owner.labelValue()})
	if err != nil {
		return 0, b.classify(err, "listing own sandbox pods")
	}
	removed := 0
	for _, p := range list.Items {
		if p.Annotations[AnnotationInstance] != instance {
			continue // another server's of this process
		}
		b.deletePod(p.Name)
		removed++
	}
	return removed, nil
}
