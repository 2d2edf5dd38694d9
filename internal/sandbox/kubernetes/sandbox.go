package kubernetes

import (
	"context"
	"sync/atomic"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
)

// podSandbox is a sandbox pod driven by agentconn over its attach stream.
type podSandbox struct {
	*agentconn.Sandbox
	used atomic.Bool
}

var _ sandbox.Session = (*podSandbox)(nil)

func newPodSandbox(name string, l *link, b *Backend) *podSandbox {
	return &podSandbox{Sandbox: agentconn.New(name, l, b.log)}
}

func (s *podSandbox) Exec(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	s.used.Store(true)
	return s.Sandbox.Exec(ctx, job, onChunk)
}

func (s *podSandbox) Call(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	s.used.Store(true)
	return s.Sandbox.Call(ctx, job, onChunk)
}

// Dead is closed when the pod ended before it got a job.
func (s *podSandbox) Dead() <-chan struct{} {
	if s.used.Load() {
		return nil // ending after its job is not dying while idle
	}
	return s.Sandbox.Ended()
}

// Gone is closed when the pod has ended.
func (s *podSandbox) Gone() <-chan struct{} { return s.Sandbox.Ended() }
