package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

func init() { subcommands = append(subcommands, newServeCmd) }

// shutdownGrace bounds the cleanup after the grace period of runs in flight:
// killed sandboxes, the pool and the sessions removed.
const shutdownGrace = 30 * time.Second

func newServeCmd(g *globalOptions) *cobra.Command {
	var (
		httpAddr  string
		authToken string
		auditPath string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (default) or Streamable HTTP",
		Long: `Serve runs the MCP server. By default it speaks MCP over stdin/stdout, as
MCP clients that launch it expect (logs go to stderr). With --http it
serves Streamable HTTP at /mcp on the given address, in stateless mode so
that clients of both protocol eras (2025-11-25 and 2026-07-28) work.

A non-loopback --http address needs --auth-token (or MCR_AUTH_TOKEN):
every request must then carry "Authorization: Bearer <token>".

Operations: /healthz (liveness) and /readyz (readiness) are served without
authentication; --metrics-addr serves Prometheus metrics on a listener of
their own (--metrics-on-http-listener=true also on the MCP listener, behind
its authentication, for operator tokens only); --audit-log appends one JSON line per tool call that
runs code or touches a session's files; --log-format json for JSON logs.

Several clients each get their own token, as NAME=TOKEN entries of
--http-auth-tokens (or http.auth_tokens): each token's sessions, executions
and outputs are its own. --http-operators names the tokens that may list
and cancel everyone's work; quotas (--quotas-*) bound each token's share.`,
		Example: `  mcp-code-runner serve
  mcp-code-runner serve --http 127.0.0.1:8080
  mcp-code-runner serve --http 127.0.0.1:8080 --metrics-addr 127.0.0.1:9464 --audit-log audit.log --log-format json
  mcp-code-runner serve --http 0.0.0.0:8080 --http-auth-tokens "alice=$ALICE_TOKEN,bob=$BOB_TOKEN,ops=$OPS_TOKEN" --http-operators ops --quotas-concurrent-runs 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := newServingStack(g, httpAddr == "")
			if err != nil {
				return err
			}
			defer st.Close()
			if authToken == "" {
				authToken = os.Getenv("MCR_AUTH_TOKEN")
			}
			// Tokens are checked before anything starts: a bad entry stops
			// the server at once.
			tokens, err := httpTokens(st.cfg.HTTP, authToken)
			if err != nil && httpAddr != "" {
				return err
			}
			if !cmd.Flags().Changed("audit-log") {
				auditPath = st.cfg.Audit.Path
			}
			auditLog, err := openAudit(auditPath, httpAddr == "")
			if err != nil {
				return err
			}
			if auditLog != nil {
				defer auditLog.Close()
			}
			ctx := cmd.Context()
			if err := listenMetrics(ctx, st); err != nil {
				return err
			}
			// The sweep keeps the sandboxes of the sessions the store
			// holds: this server re-attaches to them below.
			if k, ok := st.backend.(interface {
				SetKeep(func(context.Context) ([]sandbox.Ref, error))
			}); ok {
				k.SetKeep(sessions.Sandboxes(st.engine.Store()))
			}
			// The builder starts before the checks (which then name the
			// images it builds) and the warm pool (whose languages it
			// builds start once their image is built).
			building, err := startImageBuilds(ctx, st)
			if err != nil {
				return err
			}
			if err := startupChecks(ctx, st, building); err != nil {
				return err
			}
			go sweepLoop(ctx, st)
			st.engine.StartPool()
			go logPool(ctx, st)
			execs := executions.NewManager(st.engine, executions.WithLogger(st.log), executions.WithReplica(st.replica))
			// What a stopped server left running ends as interrupted
			// before anyone can ask for it.
			if err := execs.Recover(ctx); err != nil {
				return err
			}
			sess := sessions.NewManager(st.engine, sessions.WithLogger(st.log), sessions.WithReplica(st.replica))
			st.engine.SetEgressObserver(egressObserver(st, auditLog))
			// The sessions a stopped server left are re-attached to (or
			// end) before anyone can ask for them.
			if err := sess.Recover(ctx); err != nil {
				return err
			}
			watchServer(st, execs, sess)
			server := mcpserver.NewServer(mcpserver.Deps{Engine: st.engine, Executions: execs, Sessions: sess,
				OnToolCall: toolObserver(st, auditLog)}, version, st.log)

			// Runs in flight get the grace period after a shutdown signal,
			// then they are killed (their results say so).
			grace := time.Duration(st.cfg.ShutdownGraceSeconds) * time.Second
			stopAfterGrace := context.AfterFunc(ctx, func() {
				st.log.Info("shutting down", "runs_in_flight", len(st.engine.Inflight()), "grace", grace)
				time.AfterFunc(grace, func() {
					if n := st.engine.CancelAll(); n > 0 {
						st.log.Info("killed runs still in flight at the end of the grace period", "count", n)
					}
				})
			})
			defer stopAfterGrace()

			var serveErr error
			if httpAddr == "" {
				st.log.Info("serving MCP on stdio")
				if st.cfg.HTTP.HealthSocket != "" {
					st.log.Warn("http.health_socket is served with --http only; a stdio server's health is its client's to see")
				}
				serveErr = server.Run(ctx, transport.NewStdio())
			} else {
				serveErr = serveHTTP(ctx, st, server, sess, httpAddr, tokens)
			}
			// Stop: runs in flight see their contexts end, their sandboxes are
			// killed and removed; wait for that, bounded.
			wctx, cancel := context.WithTimeout(context.Background(), grace+shutdownGrace)
			defer cancel()
			if err := st.engine.Wait(wctx); err != nil {
				st.engine.CancelAll()
			}
			execs.Shutdown(wctx)
			sess.Shutdown()
			if err := st.engine.Wait(wctx); err != nil {
				st.log.Warn("shutdown", "err", err)
			}
			if err := st.engine.Close(wctx); err != nil {
				st.log.Warn("shutdown", "err", err)
			}
			if n, err := st.backend.RemoveOwn(wctx); err == nil && n > 0 {
				st.log.Info("removed sandboxes at shutdown", "count", n)
			}
			if serveErr != nil && !errors.Is(serveErr, context.Canceled) && !errors.Is(serveErr, http.ErrServerClosed) {
				return serveErr
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	cmd.Flags().StringVar(&authToken, "auth-token", "", "require this bearer token on HTTP requests (env MCR_AUTH_TOKEN)")
	cmd.Flags().StringVar(&auditPath, "audit-log", "", `append the audit log (one JSON line per tool call that runs code or touches a session's files) to this file, or "-" for stdout with --http (setting audit.path)`)
	g.addSettingFlags(cmd)
	return cmd
}

// httpTokens returns the configured bearer tokens and --auth-token's.
func httpTokens(h config.HTTP, authToken string) ([]config.Token, error) {
	if authToken != "" {
		h.AuthTokens = append(h.AuthTokens, authToken)
	}
	tokens, err := h.Tokens()
	if err != nil && authToken != "" {
		err = fmt.Errorf("%w (--auth-token and MCR_AUTH_TOKEN count as one more entry)", err)
	}
	return tokens, err
}

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

func serveHTTP(ctx context.Context, st *stack, server *mcp.Server, sess *sessions.Manager, addr string, tokens []config.Token) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: want HOST:PORT, like 127.0.0.1:8080", addr)
	}
	h := st.cfg.HTTP
	if !transport.IsLoopback(host) && len(tokens) == 0 && h.OAuthIssuer == "" {
		return fmt.Errorf("--http %s listens beyond this machine: set --auth-token (or MCR_AUTH_TOKEN, or http.oauth_issuer) so that only your clients can run code, or listen on 127.0.0.1", addr)
	}
	mux := http.NewServeMux()
	httpOpts := httpOptions(h, host, tokens)
	handler := transport.HTTPHandler(server, httpOpts)
	if st.metrics != nil {
		handler = st.metrics.CountRejections(handler)
	}
	mux.Handle("/mcp", handler)
	if h.OAuthIssuer != "" {
		mux.Handle(transport.MetadataPath, handler)
		mux.Handle(transport.MetadataPath+"/", handler)
	}
	probeRoutes(mux, st)
	metricsRoute(mux, st, func(next http.Handler) http.Handler { return transport.ProtectForOperators(next, httpOpts) })
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
		return fmt.Errorf("listening on %s: %w%s", addr, err, hint)
	}
	if err := listenHealthSocket(ctx, st); err != nil {
		ln.Close()
		return err
	}
	leave, err := joinPeers(ctx, st, sess, mux, ln.Addr())
	if err != nil {
		ln.Close()
		return fmt.Errorf("joining the other replicas: %w", err)
	}
	if leave != nil {
		defer leave()
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	names := make([]string, 0, len(tokens))
	for _, t := range tokens {
		if t.Operator {
			names = append(names, t.Name+" (operator)")
		} else {
			names = append(names, t.Name)
		}
	}
	st.log.Info("serving MCP over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp", "tokens", names, "reuse_port", h.ReusePort)
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), time.Duration(st.cfg.ShutdownGraceSeconds)*time.Second+shutdownGrace)
	defer cancel()
	_ = srv.Shutdown(sctx)
	return nil
}

// startupChecks logs what would stop runs from working, and removes
// sandboxes a dead server left behind. A configuration the backend cannot
// honour (a runtime the daemon lacks, an engine that cannot set the
// sandboxes' limits) stops the server.
//
// building are the image tags the background builder makes: the log says
// so, instead of calling them missing.
func startupChecks(ctx context.Context, st *stack, building map[string]bool) error {
	if err := st.backend.Check(ctx); err != nil {
		if errors.Is(err, docker.ErrRuntimeMissing) || errors.Is(err, dockerengine.ErrLimitsUnenforced) {
			return err
		}
		st.log.Error("the sandbox backend is not reachable; run_code will fail until it is", "backend", st.backendChoice, "err", err, "fix", "run `mcp-code-runner doctor`")
		return nil
	}
	if db, ok := st.backend.(*docker.Backend); ok {
		if rt, err := db.Runtime(ctx); err == nil {
			st.log.Info("sandboxes run under OCI runtime "+rt.Effective, "reason", rt.Reason)
		}
	}
	// An isolation the operator asked for that cannot be made here stops
	// the server: it would otherwise refuse every run.
	if iso, _ := sandbox.ParseIsolation(st.cfg.Isolation); iso == sandbox.IsolationGVisor {
		if err := sandbox.IsolationSupport(st.backend, iso); err != nil {
			return fmt.Errorf("isolation gvisor: %w (`mcp-code-runner doctor` says more)", err)
		}
		st.log.Info("every sandbox runs under gVisor's kernel (isolation gvisor)")
	} else if err := sandbox.IsolationSupport(st.backend, sandbox.IsolationGVisor); err == nil {
		st.log.Info("sandboxes are containers (isolation container); a call or session may ask for isolation gvisor, which works here")
	}
	for _, img := range st.reg.Images() {
		if st.reg.Optional(img) {
			continue // built only when asked for
		}
		if building[img.Tag] {
			st.log.Info("runtime image building in the background; runs in its languages wait for it", "image", img.Tag)
			continue
		}
		if err := st.backend.CheckImage(ctx, img.Tag); err != nil && img.OnDemand {
			st.log.Info("on-demand runtime image not built; its languages fail until it is", "image", img.Tag, "build", "mcp-code-runner images build "+img.Name)
		} else if err != nil {
			st.log.Warn("runtime image missing or unusable", "image", img.Tag, "err", err, "fix", "mcp-code-runner images build "+img.Name)
		}
	}
	if n, err := st.backend.Sweep(ctx); err != nil {
		st.log.Warn("sweeping left-behind sandboxes", "err", err)
	} else if n > 0 {
		st.log.Info("removed sandboxes left behind by a previous server", "count", n)
	}
	return nil
}

func sweepLoop(ctx context.Context, st *stack) {
	t := time.NewTicker(time.Duration(st.cfg.SweepIntervalSeconds) * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := st.backend.Sweep(ctx); err != nil {
				st.log.Debug("sweep", "err", err)
			}
		}
	}
}

// logPool logs the warm pool's state when it changes, at most every 30 s.
func logPool(ctx context.Context, st *stack) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	last := map[string]string{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, s := range st.engine.PoolStats() {
			line := fmt.Sprintf("%+v", s)
			if line == last[s.Language] {
				continue
			}
			last[s.Language] = line
			st.log.Info("warm pool", "language", s.Language, "idle", s.Idle, "size", s.Size, "max_size", s.MaxSize, "creating", s.Creating,
				"waiting", s.Waiting, "served", s.Served, "waited", s.Waited, "failures", s.Failures, "error", s.Error, "grow_blocked", s.GrowBlocked)
		}
	}
}

// replicaName names this server in the records of the executions and
// sessions it runs. On the embedded store it is the same at every start
// ("local"): one server per data directory, so the next one ends what the
// last left running. Replicas sharing etcd each need their own, unique
// even where host name and process id are not: two pods on the host's
// network share the node's name and, each in its own PID namespace, both
// run as PID 1. So the name ends with random bytes, taken once per process.
func replicaName(cfg config.Config) string {
	if cfg.Store.Backend != config.StoreEtcd {
		return "local"
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.ToLower(rand.Text()[:8]))
}
