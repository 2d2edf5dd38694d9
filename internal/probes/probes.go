// Package probes serves the HTTP health checks for load balancers and
// Kubernetes: /healthz (liveness: the process answers) and /readyz
// (readiness: runs would succeed now).
package probes

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
)

// checkTimeout bounds the backend check of one readiness probe; probes are
// usually given a second or a few.
const checkTimeout = 3 * time.Second

// Liveness answers 200 "ok" while the process serves HTTP. It checks
// nothing else on purpose: restarting the server would not bring back a
// Docker daemon that is down, so that belongs to readiness.
func Liveness() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		fmt.Fprintln(w, "ok")
	})
}

// Checks are what readiness asks: the sandbox backend, the state store
// (nil: none to check), and the warm pools.
type Checks struct {
	Backend func(context.Context) error
	Store   func(context.Context) error
	Pools   func() []pool.Stat
}

// Readiness answers 200 "ready" when Ready finds nothing wrong, else 503
// with the reason in plain text.
func Readiness(c Checks) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		ctx, cancel := context.WithTimeout(r.Context(), checkTimeout)
		defer cancel()
		if reason := Ready(ctx, c); reason != "" {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "not ready: "+reason)
			return
		}
		fmt.Fprintln(w, "ready")
	})
}

// Ready returns why the server cannot take runs now, or "" when it can:
// the backend must answer, the state store too (a replica that cannot
// record what it is told to do must not be sent work: the others can),
// and every pooled language must have an idle sandbox or be filling its
// pool without errors.
func Ready(ctx context.Context, c Checks) string {
	if err := c.Backend(ctx); err != nil {
		return fmt.Sprintf("the sandbox backend is unreachable: %v", err)
	}
	if c.Store != nil {
		if err := c.Store(ctx); err != nil {
			return fmt.Sprintf("the state store does not answer: %v", err)
		}
	}
	for _, s := range c.Pools() {
		if s.Idle == 0 && s.Error != "" {
			return fmt.Sprintf("the %s pool has no idle sandbox and cannot create one: %s", s.Language, s.Error)
		}
	}
	return ""
}
