package server

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/probes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// probeRoutes adds /healthz and /readyz, outside authentication: load
// balancers and kubelets call them without credentials, and they tell
// nothing but "ok" or what is broken.
func (s *Server) probeRoutes(mux *http.ServeMux) {
	mux.Handle("/healthz", probes.Liveness())
	mux.Handle("/readyz", probes.Readiness(probes.Checks{Backend: s.backend.Check, Store: storeAnswers(s.store), Pools: s.engine.PoolStats}))
}

// metricsDisabledText answers a scrape of a listener that does not serve
// metrics.
const metricsDisabledText = "metrics are not served on this listener: set metrics.addr (--metrics-addr 127.0.0.1:9464) for a separate listener, or metrics.on_http_listener (--metrics-on-http-listener=true) to serve /metrics here behind the same authentication as /mcp, for operator tokens\n"

// metricsRoute adds /metrics to the MCP listener: behind protect when
// configured there, else a 404 that says how to turn it on.
func (s *Server) metricsRoute(mux *http.ServeMux, protect func(http.Handler) http.Handler) {
	if s.metrics != nil && s.cfg.Metrics.OnHTTPListener {
		mux.Handle("/metrics", protect(s.metrics.Handler()))
		return
	}
	text := metricsDisabledText
	if addr := s.cfg.Metrics.Addr; addr != "" {
		text = "metrics are served on their own listener, at http://" + addr + "/metrics, not on this one; set metrics.on_http_listener (--metrics-on-http-listener=true) to serve them here too, behind the same authentication as /mcp, for operator tokens\n"
	}
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, text, http.StatusNotFound)
	})
}

// listenMetrics starts the separate metrics listener, if configured: it
// serves /metrics, /healthz and /readyz without authentication, for a
// scraper on loopback or a private network. It stops when ctx ends.
func (s *Server) listenMetrics(ctx context.Context) error {
	addr := s.cfg.Metrics.Addr
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
		s.log.Warn("the metrics listener is not on loopback and has no authentication: expose it only to your scraper's network", "addr", addr)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", s.metrics.Handler())
	s.probeRoutes(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("serving Prometheus metrics", "url", "http://"+ln.Addr().String()+"/metrics")
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("metrics listener stopped", "err", err)
		}
	}()
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}

// storeAnswers checks that st answers a read: a missing key is an answer.
func storeAnswers(state store.Store) func(context.Context) error {
	return func(ctx context.Context) error {
		if _, err := state.Get(ctx, "readiness"); err != nil && !errors.Is(err, store.ErrNotFound) {
			return err
		}
		return nil
	}
}

// listenHealthSocket serves /healthz and /readyz on http.health_socket, if
// set, until ctx ends. The socket belongs to this process: a probe there
// asks this server, even when several share a TCP port (http.reuse_port).
// A socket file left by a dead server is replaced; any other file is not.
func (s *Server) listenHealthSocket(ctx context.Context) error {
	path := s.cfg.HTTP.HealthSocket
	if path == "" {
		return nil
	}
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return fmt.Errorf("http.health_socket %s: the path exists and is not a socket; choose another path", path)
		}
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("http.health_socket %s: removing a stale socket: %w", path, err)
		}
	}
	ln, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("http.health_socket %s: %w", path, err)
	}
	mux := http.NewServeMux()
	s.probeRoutes(mux)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.log.Info("serving health probes on a Unix socket", "path", path)
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("health socket stopped", "err", err)
		}
	}()
	// A stopping server is not ready: the socket goes as shutdown begins.
	context.AfterFunc(ctx, func() { _ = srv.Close() })
	return nil
}
