package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Backend wraps b so that every sandbox creation and removal is timed. The
// engine and the pool use it like any backend; they need not know about
// metrics.
func (m *Metrics) Backend(b sandbox.Backend) sandbox.Backend {
	return &timedBackend{Backend: b, m: m}
}

type timedBackend struct {
	sandbox.Backend
	m *Metrics
}

func (b *timedBackend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	start := time.Now()
	sb, err := b.Backend.Create(ctx, t)
	purpose := t.Purpose
	if len(purpose) > len("session-") && purpose[:len("session-")] == "session-" {
		purpose = "session"
	}
	b.m.SandboxCreated(purpose, time.Since(start), err)
	if err != nil {
		return nil, err
	}
	return &timedSandbox{Sandbox: sb, m: b.m}, nil
}

// timedSandbox times its first Close (the removal; later ones do nothing).
type timedSandbox struct {
	sandbox.Sandbox
	m    *Metrics
	once sync.Once
}

func (s *timedSandbox) Close() {
	s.once.Do(func() {
		start := time.Now()
		s.Sandbox.Close()
		s.m.SandboxRemoved(time.Since(start))
	})
}

// MemoryUsage is the wrapped sandbox's ([sandbox.MemoryReader]).
func (s *timedSandbox) MemoryUsage() (bytes uint64, ok bool) { return sandbox.MemoryUsage(s.Sandbox) }

// CountRejections wraps an HTTP handler so that the refusals of the layers
// inside it (authentication, rate limit, Host and Origin checks) are
// counted by reason.
func (m *Metrics) CountRejections(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(&statusRecorder{ResponseWriter: w, m: m}, r)
	})
}

// statusRecorder counts the response's status once it is known, and passes
// everything through (streaming responses are flushed as before).
type statusRecorder struct {
	http.ResponseWriter
	m       *Metrics
	written bool
}

func (s *statusRecorder) WriteHeader(code int) {
	if !s.written {
		s.written = true
		switch code {
		case http.StatusUnauthorized:
			s.m.Reject(ReasonAuth)
		case http.StatusTooManyRequests:
			s.m.Reject(ReasonRate)
		case http.StatusForbidden:
			s.m.Reject(ReasonForbidden)
		}
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(p []byte) (int, error) {
	s.written = true
	return s.ResponseWriter.Write(p)
}

func (s *statusRecorder) Flush() {
	s.written = true
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }
