package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/probes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// openAudit opens the audit log the configuration names, if any. Standard
// output carries MCP messages on stdio, so "-" is refused there.
func openAudit(path string, stdio bool) (*audit.Log, error) {
	switch {
	case path == "":
		return nil, nil
	case path == "-" && stdio:
		return nil, errors.New(`--audit-log - (standard output) cannot be used when serving MCP on stdio: stdout carries the MCP messages; give a file path, or serve with --http`)
	}
	return audit.Open(path)
}

// toolObserver returns what sees every finished tool call: the audit log
// and the metrics, either of which may be off.
func toolObserver(st *stack, auditLog *audit.Log) func(context.Context, mcpserver.ToolCall) {
	if auditLog == nil && st.metrics == nil {
		return nil
	}
	return func(ctx context.Context, c mcpserver.ToolCall) {
		if st.metrics != nil {
			st.metrics.ToolCall(c.Tool, c.ErrorCode())
		}
		if auditLog == nil || !audit.Audited[c.Tool] {
			return
		}
		e := audit.Entry{
			Time: c.Time.UTC(), Principal: principal.FromContext(ctx).Name, Tool: c.Tool, Language: c.Language,
			CodeSHA256: c.CodeSHA256, SessionID: c.SessionID, ExecutionID: c.ExecutionID, RunID: c.RunID,
			SandboxID: c.SandboxID, Status: c.Status, ExitCode: c.ExitCode, DurationMs: c.Duration.Milliseconds(),
		}
		if c.Err != nil {
			e.Error = c.Err.Error()
		}
		if err := auditLog.Write(e); err != nil {
			st.log.Error("writing the audit log", "err", err, "tool", c.Tool)
		}
	}
}

// egressObserver writes an audit line and counts the metrics of every
// connection a sandbox made through its egress proxy.
func egressObserver(st *stack, auditLog *audit.Log) engine.EgressObserver {
	return func(owner, runID string, c egress.Connection) {
		event := audit.EventEgress
		if c.Method == egress.MethodApproval {
			// An answer to an approval, not a connection: no metric.
			event = audit.EventEgressApproval
		} else if st.metrics != nil {
			st.metrics.Egress(owner, c.Allowed, c.Bytes)
		}
		if auditLog == nil {
			return
		}
		status := "denied"
		if c.Allowed {
			status = "allowed"
		}
		if event == audit.EventEgressApproval {
			status = c.Reason
		}
		e := audit.Entry{Time: time.Now().UTC(), Event: event, Principal: owner, RunID: runID, Status: status,
			Egress: &c}
		if err := auditLog.Write(e); err != nil {
			st.log.Error("writing the audit log", "err", err, "event", event)
		}
	}
}

// watchServer registers the gauges read from the server's state at each
// scrape.
func watchServer(st *stack, execs *executions.Manager, sess *sessions.Manager) {
	m := st.metrics
	if m == nil {
		return
	}
	m.WatchPool(st.engine.PoolStats)
	m.Gauge("runs_in_flight", "Runs executing now (one-shot, session and execution runs).", func() float64 { return float64(len(st.engine.Inflight())) })
	m.Gauge("sessions_active", "Live sessions.", func() float64 { return float64(sess.Count()) })
	m.Gauge("executions_active", "Executions (start_execution) that have not ended.", func() float64 { return float64(execs.Running()) })
}

// probeRoutes adds /healthz and /readyz, outside authentication: load
// balancers and kubelets call them without credentials, and they tell
// nothing but "ok" or what is broken.
func probeRoutes(mux *http.ServeMux, st *stack) {
	mux.Handle("/healthz", probes.Liveness())
	mux.Handle("/readyz", probes.Readiness(probes.Checks{Backend: st.backend.Check, Store: storeAnswers(st.engine.Store()), Pools: st.engine.PoolStats}))
}

// metricsDisabledText answers a scrape of a listener that does not serve
// metrics.
const metricsDisabledText = "metrics are not served on this listener: set metrics.addr (--metrics-addr 127.0.0.1:9464) for a separate listener, or metrics.on_http_listener (--metrics-on-http-listener=true) to serve /metrics here behind the same authentication as /mcp, for operator tokens\n"

// metricsRoute adds /metrics to the MCP listener: behind protect when
// configured there, else a 404 that says how to turn it on.
func metricsRoute(mux *http.ServeMux, st *stack, protect func(http.Handler) http.Handler) {
	if st.metrics != nil && st.cfg.Metrics.OnHTTPListener {
		mux.Handle("/metrics", protect(st.metrics.Handler()))
		return
	}
	text := metricsDisabledText
	if addr := st.cfg.Metrics.Addr; addr != "" {
		text = "metrics are served on their own listener, at http://" + addr + "/metrics, not on this one; set metrics.on_http_listener (--metrics-on-http-listener=true) to serve them here too, behind the same authentication as /mcp, for operator tokens\n"
	}
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, text, http.StatusNotFound)
	})
}

// listenMetrics starts the separate metrics listener, if configured: it
// serves /metrics, /healthz and /readyz without authentication, for a
// scraper on loopback or a private network. It stops when ctx ends.
func listenMetrics(ctx context.Context, st *stack) error {
	addr := st.cfg.Metrics.Addr
	if addr == "" {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("metrics.addr %q: want HOST:PORT, like 127.0.0.1:9464", addr)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics listener on %s: %w", addr, err)
	}
	if !transport.IsLoopback(host) {
		st.log.Warn("the metrics listener is not on loopback and has no authentication: expose it only to your scraper's network", "addr", addr)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", st.metrics.Handler())
	probeRoutes(mux, st)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	st.log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			st.log.Error("metrics listener stopped", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// storeAnswers checks that st answers a read: a missing key is an answer.
func storeAnswers(st store.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := st.Get(ctx, "readiness"); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
}
