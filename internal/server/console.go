package server

import (
	"net/http"

	"github.com/mcp-code-runner/mcp-code-runner/internal/console"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

// consoleRoute mounts the operator console (internal/console) at /console
// on the MCP listener, behind the listener's Host and Origin checks and its
// tokens: only operators get in.
func (s *Server) consoleRoute(mux *http.ServeMux, opts transport.HTTPOptions) {
	h := console.New(console.Deps{
		Engine: s.engine, Executions: s.execs, Sessions: s.sess,
		Audit: s.opts.Audit, HTTP: opts, Log: s.log,
		Approvals: s.gate.Approvals(),
	})
	mux.Handle(console.Path, h)
	mux.Handle(console.Path+"/", h)
}
