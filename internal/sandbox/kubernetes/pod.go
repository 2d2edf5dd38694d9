package kubernetes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/streaming/pkg/httpstream"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// Create makes a sandbox pod from t, waits (at most the start timeout) for
// its agent to run, and attaches to it. On any failure the pod is deleted
// and the error says what to fix.
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	if t.Egress != nil || len(t.Mounts) > 0 {
		return nil, fmt.Errorf("%w: network tiers and packages need the docker backend (the kubernetes backend's sandboxes have no network and no host mounts); use network \"none\" and no packages", sandbox.ErrUnsupported)
	}
	b.ensureNetworkPolicy(ctx)
	pod := Pod(t, b.opts.Pod, time.Now())
	// The create call is not cancelled with ctx: a cancellation while the
	// API server makes the pod would lose its name and leave it behind.
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	created, err := b.cs.CoreV1().Pods(pod.Namespace).Create(cctx, pod, metav1.CreateOptions{})
	cancel()
	if err != nil {
		return nil, b.classify(err, "creating the sandbox pod")
	}
	l := &link{b: b, name: created.Name, ended: make(chan struct{}), diag: &cappedBuffer{limit: 64 << 10}}
	fail := func(err error) (sandbox.Sandbox, error) {
		l.Close()
		return nil, err
	}
	if _, err := b.waitRunning(ctx, created); err != nil {
		return fail(err)
	}
	if err := l.attach(ctx); err != nil {
		return fail(err)
	}
	return agentconn.New(created.Name, l, b.log), nil
}

// waitRunning watches pod until its sandbox container runs, it fails, or
// the start timeout passes; it answers at once for the failures waiting
// cannot mend (an image that cannot be pulled, a container that cannot be
// made).
func (b *Backend) waitRunning(ctx context.Context, pod *corev1.Pod) (*corev1.Pod, error) {
	ctx, cancel := context.WithTimeout(ctx, b.opts.StartTimeout)
	defer cancel()
	pods := b.cs.CoreV1().Pods(pod.Namespace)
	last, rv := pod, pod.ResourceVersion
	for {
		w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + pod.Name, ResourceVersion: rv})
		if err != nil {
			if ctx.Err() != nil {
				return nil, b.startTimeout(ctx, last)
			}
			return nil, b.classify(err, "watching the sandbox pod start")
		}
		for ev := range w.ResultChan() {
			if ev.Type == watch.Error {
				rv = "" // expired: start again from the current state
				break
			}
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			if ev.Type == watch.Deleted {
				w.Stop()
				return nil, fmt.Errorf("%w: sandbox pod %s was deleted while it started", sandbox.ErrDead, p.Name)
			}
			last, rv = p, p.ResourceVersion
			if running, err := b.startState(ctx, p); running || err != nil {
				w.Stop()
				return p, err
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return nil, b.startTimeout(ctx, last)
		}
		if rv == "" {
			p, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				return nil, b.classify(err, "reading the sandbox pod")
			}
			last, rv = p, p.ResourceVersion
			if running, err := b.startState(ctx, p); running || err != nil {
				return p, err
			}
		}
	}
}

// imagePullReasons are the waiting reasons of a container whose image
// cannot be had.
var imagePullReasons = map[string]bool{
	"ErrImagePull": true, "ImagePullBackOff": true, "ErrImageNeverPull": true,
	"InvalidImageName": true, "ImageInspectError": true, "RegistryUnavailable": true,
}

// startState reports whether p's sandbox container runs, or why it never
// will.
func (b *Backend) startState(ctx context.Context, p *corev1.Pod) (bool, error) {
	statuses := append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...)
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil {
			switch {
			case imagePullReasons[w.Reason]:
				return false, fmt.Errorf("%w: the image %s of sandbox pod %s cannot be pulled on node %s (%s: %s): push it to a registry the nodes reach (with --kubernetes-image-pull-secrets if it is private), or import it on the nodes (for the test cluster: scripts/k8s/images.sh import %s)",
					sandbox.ErrImageMissing, cs.Image, p.Name, p.Spec.NodeName, w.Reason, w.Message, cs.Image)
			case w.Reason == "CreateContainerConfigError" || w.Reason == "CreateContainerError" || w.Reason == "RunContainerError" || w.Reason == "CrashLoopBackOff":
				return false, fmt.Errorf("sandbox pod %s: container %s cannot start (%s: %s)", p.Name, cs.Name, w.Reason, w.Message)
			}
		}
		if term := cs.State.Terminated; term != nil && (cs.Name == ContainerName || term.ExitCode != 0) {
			return false, fmt.Errorf("%w: sandbox pod %s: container %s ended before the sandbox was ready (%s, exit code %d%s)%s",
				sandbox.ErrDead, p.Name, cs.Name, term.Reason, term.ExitCode, prefixed(": ", term.Message), b.logTail(ctx, p.Name, cs.Name))
		}
		if cs.Name == ContainerName && cs.State.Running != nil {
			return true, nil
		}
	}
	switch p.Status.Phase {
	case corev1.PodFailed, corev1.PodSucceeded:
		return false, fmt.Errorf("%w: sandbox pod %s ended before it was ready (%s: %s)", sandbox.ErrDead, p.Name, p.Status.Reason, p.Status.Message)
	}
	return false, nil
}

// startTimeout is the error of a pod that did not run in time: what it was
// still waiting for, and what to do.
func (b *Backend) startTimeout(ctx context.Context, p *corev1.Pod) error {
	// The last state seen may be old; read it once more.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if cur, err := b.cs.CoreV1().Pods(p.Namespace).Get(rctx, p.Name, metav1.GetOptions{}); err == nil {
		p = cur
	}
	limit := b.opts.StartTimeout
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return fmt.Errorf("sandbox pod %s was not scheduled within %s (%s: %s): no node can take it; free capacity or add nodes, or check --kubernetes-node-selector, --kubernetes-tolerations and --kubernetes-runtime-class-name",
				p.Name, limit, c.Reason, c.Message)
		}
	}
	if p.Spec.NodeName == "" {
		return fmt.Errorf("sandbox pod %s was not scheduled within %s: is a scheduler running in the cluster?", p.Name, limit)
	}
	var waiting []string
	for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
		if w := cs.State.Waiting; w != nil {
			waiting = append(waiting, fmt.Sprintf("%s: %s %s", cs.Name, w.Reason, w.Message))
		}
	}
	return fmt.Errorf("sandbox pod %s on node %s did not start within %s (phase %s; %s): the node may be slow to pull the images or overloaded; raise --kubernetes-start-timeout-seconds or check the node",
		p.Name, p.Spec.NodeName, limit, p.Status.Phase, strings.Join(waiting, "; "))
}

// logTail returns the end of a container's log, for the error of a
// container that failed to start ("" if it cannot be read).
func (b *Backend) logTail(ctx context.Context, pod, container string) string {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	limit := int64(2048)
	data, err := b.cs.CoreV1().Pods(b.opts.Pod.Namespace).GetLogs(pod, &corev1.PodLogOptions{Container: container, LimitBytes: &limit}).DoRaw(rctx)
	if err != nil || len(bytes.TrimSpace(data)) == 0 {
		return ""
	}
	return "; its output: " + strings.TrimSpace(string(data))
}

func prefixed(prefix, s string) string {
	if s == "" {
		return ""
	}
	return prefix + s
}

// link is the byte stream to one pod's agent, attached through the API
// server, with the signals agentconn needs.
type link struct {
	b      *Backend
	name   string
	stdin  *io.PipeWriter
	stdout *io.PipeReader
	diag   *cappedBuffer
	cancel context.CancelFunc // ends the attach
	ended  chan struct{}      // closed when the attach ended
	closed sync.Once
}

var _ agentconn.Link = (*link)(nil)

// attach opens the attach stream to the sandbox container and returns once
// the API server has connected it (the stream's first read of our side),
// or with why it could not.
func (l *link) attach(ctx context.Context) error {
	b := l.b
	req := b.cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(b.opts.Pod.Namespace).Name(l.name).SubResource("attach").
		VersionedParams(&corev1.PodAttachOptions{Container: ContainerName, Stdin: true, Stdout: true, Stderr: true, TTY: false}, scheme.ParameterCodec)
	exec, err := newExecutor(b, req.URL())
	if err != nil {
		close(l.ended)
		return fmt.Errorf("attaching to sandbox pod %s: %w", l.name, err)
	}
	stdinR, stdinW := io.Pipe()
	stdoutR, stdoutW := io.Pipe()
	l.stdin, l.stdout = stdinW, stdoutR
	actx, cancel := context.WithCancel(context.Background())
	l.cancel = cancel
	connected := make(chan struct{})
	in := &firstRead{r: stdinR, first: connected}
	errc := make(chan error, 1)
	go func() {
		err := exec.StreamWithContext(actx, remotecommand.StreamOptions{Stdin: in, Stdout: stdoutW, Stderr: l.diag})
		errc <- err
		if err == nil {
			err = io.EOF
		}
		stdoutW.CloseWithError(err)
		stdinR.CloseWithError(errors.New("the sandbox's attach stream ended"))
		close(l.ended)
	}()
	timer := time.NewTimer(b.opts.StartTimeout)
	defer timer.Stop()
	select {
	case <-connected:
		return nil
	case err := <-errc:
		if err == nil {
			err = errors.New("the stream ended at once")
		}
		return b.classify(err, fmt.Sprintf("attaching to sandbox pod %s", l.name))
	case <-ctx.Done():
		return fmt.Errorf("attaching to sandbox pod %s: %w", l.name, ctx.Err())
	case <-timer.C:
		return fmt.Errorf("attaching to sandbox pod %s: not connected within %s: the API server or the node's kubelet does not answer", l.name, b.opts.StartTimeout)
	}
}

// newExecutor streams over WebSocket (what current API servers prefer),
// falling back to SPDY for those that refuse the upgrade.
func newExecutor(b *Backend, u *url.URL) (remotecommand.Executor, error) {
	ws, err := remotecommand.NewWebSocketExecutor(b.rest, http.MethodGet, u.String())
	if err != nil {
		return nil, err
	}
	spdy, err := remotecommand.NewSPDYExecutor(b.rest, http.MethodPost, u)
	if err != nil {
		return nil, err
	}
	return remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
		return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
	})
}

func (l *link) Stream(context.Context) (agentconn.Stream, error) {
	select {
	case <-l.ended:
		return agentconn.Stream{}, fmt.Errorf("%w: the attach stream of sandbox pod %s ended", sandbox.ErrDead, l.name)
	default:
	}
	return agentconn.Stream{Reader: l.stdout, Writer: l.stdin, CloseWrite: l.stdin.Close}, nil
}

// Kill deletes the pod at once and ends the attach stream.
func (l *link) Kill(context.Context) {
	l.b.deletePod(l.name)
	l.cancel()
}

// OOMKilled waits (within ctx) for the sandbox container to stop and
// reports whether it was killed for its memory limit.
func (l *link) OOMKilled(ctx context.Context) bool {
	pods := l.b.cs.CoreV1().Pods(l.b.opts.Pod.Namespace)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		p, err := pods.Get(ctx, l.name, metav1.GetOptions{})
		if err != nil {
			return false // deleted (killed from here) or unreadable
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.Name == ContainerName && cs.State.Terminated != nil {
				return cs.State.Terminated.Reason == "OOMKilled"
			}
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string { return l.diag.String() }

// Close ends the attach and deletes the pod.
func (l *link) Close() {
	l.closed.Do(func() {
		if l.cancel != nil {
			l.cancel()
		}
		if l.stdin != nil {
			l.stdin.Close()
		}
		l.b.deletePod(l.name)
	})
}

// firstRead closes first on the first Read: the executor reads its stdin
// only once the stream is connected.
type firstRead struct {
	r     io.Reader
	first chan struct{}
	once  sync.Once
}

func (f *firstRead) Read(p []byte) (int, error) {
	f.once.Do(func() { close(f.first) })
	return f.r.Read(p)
}

// cappedBuffer keeps the first limit bytes written to it.
type cappedBuffer struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	limit int
}

func (c *cappedBuffer) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.limit - c.buf.Len(); room > 0 {
		c.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *cappedBuffer) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.buf.String()
}
