// Package console is the operator console: a page at /console on the MCP
// listener where an operator sees the live sessions and executions of every
// principal, the runs in flight, paused sessions, the image builds, the
// egress approvals in force and the audit log's latest lines, and cancels an
// execution or pauses or closes a session. It is rendered on the server from
// Go templates (html/template escapes every value, program output
// included) and kept current over server-sent events; its script only
// swaps in fragments the server rendered.
//
// Only operators get in: a request carries an operator's bearer token, or
// the console's own session cookie, which the login form gives for an
// operator's token (a browser cannot send an Authorization header on a
// navigation). A listener without authentication is a loopback one with a
// single user, who is its operator. Actions are POSTs that need the
// session's CSRF token, from a same-origin page (the listener's Origin
// check and the browser's Fetch Metadata both refuse cross-site requests).
// The console shows names, never secret values: secrets by name, tokens not
// at all.
package console

import (
	"context"
	"embed"
	"html/template"
	"log/slog"
	"net/http"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// Path is where the console is served.
const Path = "/console"

// Deps are what the console shows and acts on: the managers and engine the
// MCP tools use, the audit log (nil when it is off) and the listener's
// options (its tokens and its Host and Origin checks).
type Deps struct {
	Engine     *engine.Engine
	Executions *executions.Manager
	Sessions   *sessions.Manager
	Audit      *audit.Log
	// Approvals are the egress hosts users approved; nil when none are
	// kept.
	Approvals *approval.Approvals
	HTTP      transport.HTTPOptions
	Log       *slog.Logger
	// Refresh is how often the live view is rendered for its listeners;
	// a second when zero.
	Refresh time.Duration
}

//go:embed assets
var assets embed.FS

var pages = template.Must(template.New("").Funcs(template.FuncMap{
	"age":    age,
	"clock":  func(t time.Time) string { return t.UTC().Format("15:04:05") },
	"mib":    func(kb int64) int64 { return (kb + 1023) / 1024 },
	"memory": memory,
}).ParseFS(assets, "assets/*.html"))

// Console serves the console.
type Console struct {
	d       Deps
	tokens  *transport.Tokens
	logins  *logins
	mux     *http.ServeMux
	refresh time.Duration
}

// New returns the console's handler, to mount at [Path] and Path+"/".
func New(d Deps) http.Handler {
	_, h := build(d)
	return h
}

func build(d Deps) (*Console, http.Handler) {
	if d.Log == nil {
		d.Log = slog.New(slog.DiscardHandler)
	}
	c := &Console{d: d, tokens: transport.NewTokens(d.HTTP), logins: newLogins(), mux: http.NewServeMux(), refresh: d.Refresh}
	if c.refresh <= 0 {
		c.refresh = time.Second
	}
	c.mux.Handle("GET "+Path+"/assets/", http.StripPrefix(Path, http.FileServerFS(assets)))
	c.mux.HandleFunc("POST "+Path+"/login", c.login)
	c.mux.Handle("POST "+Path+"/logout", c.operator(c.logout))
	c.mux.Handle("GET "+Path, c.operator(c.page))
	c.mux.Handle("GET "+Path+"/{$}", c.operator(c.page))
	c.mux.Handle("GET "+Path+"/events", c.operator(c.events))
	c.mux.Handle("POST "+Path+"/executions/{id}/cancel", c.operator(c.action(c.cancelExecution)))
	c.mux.Handle("POST "+Path+"/sessions/{id}/pause", c.operator(c.action(c.pauseSession)))
	c.mux.Handle("POST "+Path+"/sessions/{id}/close", c.operator(c.action(c.closeSession)))
	// Cross-site requests are refused twice: the listener's Origin check,
	// and Fetch Metadata (Sec-Fetch-Site) for the browsers that send no
	// Origin.
	return c, transport.Guard(securityHeaders(http.NewCrossOriginProtection().Handler(c.mux)), d.HTTP)
}

// securityHeaders keeps the console's pages to their own script and styles,
// out of frames, and out of caches.
func securityHeaders(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
		h.Set("X-Frame-Options", "DENY")
		h.Set("X-Content-Type-Options", "nosniff")
		// same-origin, not no-referrer: under no-referrer a browser sends its
		// forms with "Origin: null", which the Origin check refuses.
		h.Set("Referrer-Policy", "same-origin")
		h.Set("Cache-Control", "no-store")
		next.ServeHTTP(w, r)
	})
}

// operatorKey carries the console visitor of a request.
type operatorKey struct{}

// visitor is an operator at the console.
type visitor struct {
	p principal.Principal
	// csrf is the token the visitor's forms carry; "" for a request that
	// authenticated with a bearer token (no browser adds one by itself).
	csrf string
}

func visitorOf(ctx context.Context) visitor { return ctx.Value(operatorKey{}).(visitor) }

// asOperator is ctx as the visitor's principal, with the operator role the
// managers check: an unauthenticated loopback listener's single user is its
// operator.
func asOperator(ctx context.Context) context.Context {
	p := visitorOf(ctx).p
	p.Operator = true
	return principal.WithContext(ctx, p)
}

func age(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := time.Since(t)
	if d < time.Hour {
		return d.Round(time.Second).String()
	}
	return d.Truncate(time.Minute).String()
}
