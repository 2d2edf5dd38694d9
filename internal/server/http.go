package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

// httpOptions are the guards of a listener on host. The per-client rate
// limit applies where clients are told apart: a listener with tokens or
// OAuth, or one beyond loopback. A loopback listener without them has one
// client, this machine's user, whose parallel calls max_concurrent_runs and
// the run queue already pace; a rate limit there would only refuse them.
func httpOptions(h config.HTTP, host string, tokens []config.Token) transport.HTTPOptions {
	allowedHosts := h.AllowedHosts
	if !transport.IsLoopback(host) && host != "" {
		allowedHosts = append(allowedHosts, host)
	}
	ratePerMinute := h.RatePerMinute
	if transport.IsLoopback(host) && len(tokens) == 0 && h.OAuthIssuer == "" {
		ratePerMinute = 0
	}
	return transport.HTTPOptions{
		AllowedOrigins: h.AllowedOrigins,
		AllowedHosts:   allowedHosts,
		MaxBodyBytes:   h.MaxBodyBytes,
		Tokens:         tokens,
		RatePerMinute:  ratePerMinute,
		OAuth: transport.OAuthOptions{
			Issuer: h.OAuthIssuer, IntrospectionURL: h.OAuthIntrospectionURL,
			ClientID: h.OAuthClientID, ClientSecret: h.OAuthClientSecret,
			ResourceURL: h.PublicURL, Scopes: h.OAuthScopes, OperatorScope: h.OAuthOperatorScope,
		},
	}
}

// listenHTTP binds the Streamable HTTP listener on opts.HTTPAddr and
// returns what serves MCP on it, beside the probes, the metrics route and,
// on a shared store, the calls other replicas forward, until ctx ends.
func (s *Server) listenHTTP(ctx context.Context) (serve func() error, err error) {
	addr, tokens := s.opts.HTTPAddr, s.opts.Tokens
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--http %q: want HOST:PORT, like 127.0.0.1:8080", addr)
	}
	h := s.cfg.HTTP
	if !transport.IsLoopback(host) && len(tokens) == 0 && h.OAuthIssuer == "" {
		return nil, fmt.Errorf("--http %s listens beyond this machine: set --auth-token (or MCR_AUTH_TOKEN, or http.oauth_issuer) so that only your clients can run code, or listen on 127.0.0.1", addr)
	}
	mux := http.NewServeMux()
	httpOpts := httpOptions(h, host, tokens)
	handler := transport.HTTPHandler(s.mcp, httpOpts)
	if s.metrics != nil {
		handler = s.metrics.CountRejections(handler)
	}
	mux.Handle("/mcp", handler)
	if h.OAuthIssuer != "" {
		mux.Handle(transport.MetadataPath, handler)
		mux.Handle(transport.MetadataPath+"/", handler)
	}
	s.probeRoutes(mux)
	s.metricsRoute(mux, func(next http.Handler) http.Handler { return transport.ProtectForOperators(next, httpOpts) })
	s.consoleRoute(mux, httpOpts)
	// The listener binds once the server can serve: with http.reuse_port,
	// joining the port's group is what sends connections here.
	var lc net.ListenConfig
	if h.ReusePort {
		lc.Control = reusePort
	}
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		hint := ""
		if errors.Is(err, syscall.EADDRINUSE) && !h.ReusePort {
			hint = " (another process has the port: choose another, or set http.reuse_port on every server that shares it)"
		}
		return nil, fmt.Errorf("listening on %s: %w%s", addr, err, hint)
	}
	if err := s.listenHealthSocket(ctx); err != nil {
		ln.Close()
		return nil, err
	}
	leave, err := s.joinReplicas(ctx, mux, ln.Addr())
	if err != nil {
		ln.Close()
		return nil, fmt.Errorf("joining the other replicas: %w", err)
	}
	s.addr = ln.Addr()
	names := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if t.Operator {
			names = append(names, t.Name+" (operator)")
		} else {
			names = append(names, t.Name)
		}
	}
	s.log.Info("serving MCP over Streamable HTTP", "url", s.URL(), "tokens", names, "reuse_port", h.ReusePort)
	return func() error {
		if leave != nil {
			defer leave()
		}
		return s.serveHTTP(ctx, ln, mux)
	}, nil
}

// serveHTTP serves mux on ln until ctx ends.
func (s *Server) serveHTTP(ctx context.Context, ln net.Listener, mux *http.ServeMux) error {
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	// New connections are refused before the listener closes, and those
	// already queued are served: closing it at once would reset them, and
	// their calls would get no answer. Answers say the connection closes,
	// so that clients do not send more on it.
	srv.SetKeepAlivesEnabled(false)
	refuseNew(ln, time.Second)
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(s.cfg.ShutdownGraceSeconds)*time.Second+shutdownGrace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}
