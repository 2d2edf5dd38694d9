package server

import (
	"context"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// toolObserver returns what sees every finished tool call: the parts'
// observer, the audit log and the metrics, any of which may be off.
func (s *Server) toolObserver(auditLog *audit.Log) func(context.Context, mcpserver.ToolCall) {
	if auditLog == nil && s.metrics == nil && s.onToolCall == nil {
		return nil
	}
	return func(ctx context.Context, c mcpserver.ToolCall) {
		if s.onToolCall != nil {
			s.onToolCall(ctx, c)
		}
		if s.metrics != nil {
			s.metrics.ToolCall(c.Tool, c.ErrorCode())
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
			s.log.Error("writing the audit log", "err", err, "tool", c.Tool)
		}
	}
}

// egressObserver writes an audit line and counts the metrics of every
// connection a sandbox made through its egress proxy.
func (s *Server) egressObserver(auditLog *audit.Log) gate.Observer {
	return func(owner, runID string, c egress.Connection) {
		event := audit.EventEgress
		if c.Method == egress.MethodApproval {
			// An answer to an approval, not a connection: no metric.
			event = audit.EventEgressApproval
		} else if s.metrics != nil {
			s.metrics.Egress(owner, c.Allowed, c.Bytes)
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
			s.log.Error("writing the audit log", "err", err, "event", event)
		}
	}
}

// watchServer registers the gauges read from the server's state at each
// scrape.
func (s *Server) watchServer() {
	m := s.metrics
	if m == nil {
		return
	}
	m.WatchPool(s.engine.PoolStats)
	m.Gauge("runs_in_flight", "Runs executing now (one-shot, session and execution runs).", func() float64 { return float64(len(s.engine.Inflight())) })
	m.Gauge("sessions_active", "Live sessions.", func() float64 { return float64(s.sess.Count()) })
	m.Gauge("executions_active", "Executions (start_execution) that have not ended.", func() float64 { return float64(s.execs.Running()) })
}
