package server

import (
	"fmt"
	"os"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
)

// newCodeMode makes the broker of code_mode.servers through which the
// engine's runs call tools, or nil when there are none; each brokered call
// gets an audit line and its metrics. It connects to no server until a
// run needs it.
func (s *Server) newCodeMode() *codemode.Broker {
	if len(s.cfg.CodeMode.Servers) == 0 {
		return nil
	}
	secret := func(name string) (string, error) {
		for _, sec := range s.cfg.Network.Secrets {
			if sec.Name == name {
				return sec.Value(os.Getenv)
			}
		}
		return "", fmt.Errorf("no secret %q in network.secrets", name)
	}
	b := codemode.New(s.cfg.CodeMode, secret, os.Getenv, s.log)
	if s.metrics != nil {
		count := s.metrics.CodeMode()
		b.Observe(func(r codemode.Record) { count(r.Server, r.Tool, r.Status, r.Duration, r.ResultBytes) })
	}
	if auditLog := s.opts.Audit; auditLog != nil {
		b.Observe(func(r codemode.Record) {
			err := auditLog.WriteToolCall(audit.ToolCallEntry{Time: time.Now().UTC(), Principal: r.Principal, RunID: r.RunID,
				Server: r.Server, Tool: r.Tool, Status: r.Status, DurationMs: r.Duration.Milliseconds(),
				ArgsBytes: r.ArgsBytes, ResultBytes: r.ResultBytes, Arguments: r.Arguments, Error: r.Error})
			if err != nil {
				s.log.Error("writing the audit log", "err", err, "event", audit.EventToolCall)
			}
		})
	}
	s.log.Info("code mode: MCP servers for runs' code", "servers", b.Servers())
	return b
}
