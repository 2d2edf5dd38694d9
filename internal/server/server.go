// Package server is the MCP server as one value: [New] takes the parts the
// CLI assembled (configuration, registry, sandbox backend, state store,
// network gate) and makes the engine on them, [Start]
// brings it up in its one order (metrics listener, background image
// builds, start-up checks and sweep, warm pool, recovery of the
// executions and sessions a stopped server left, the MCP server, then the
// stdio or HTTP transport), [Server.Wait] returns when serving ends, and
// [Server.Shutdown] gives runs in flight their grace, then ends
// executions, sessions, the engine and the sandboxes this server made:
// its own, not those of other servers in the same process (bench and the
// tests run several), which its engine tells apart by the server's
// instance name on every sandbox it makes.
package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/metrics"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// shutdownGrace bounds the cleanup after the grace period of runs in flight:
// killed sandboxes, the pool and the sessions removed.
const shutdownGrace = 30 * time.Second

// Parts are what the CLI assembles before a server starts; the server
// makes its engine of them.
type Parts struct {
	Config   config.Config
	Registry *languages.Registry
	Backend  sandbox.Backend
	// Store holds the state that outlives a request: outputs, executions,
	// tasks, sessions, approvals. Without it the state lives in this
	// process's memory.
	Store store.Store
	// Gate is the network gate of the engine's and the sessions'
	// sandboxes (its secrets loaded); the audit log and metrics hear of
	// every sandbox's connections through it. Without it the server makes
	// one of the configuration, with no secrets.
	Gate *gate.Gate
	// EngineOptions are the engine's besides what the server gives it
	// (its store, gate, metrics, image builds and code mode): the runtime
	// versions, the shared quota.
	EngineOptions []engine.Option
	Log           *slog.Logger
	// Metrics is nil unless the configuration serves them.
	Metrics *metrics.Metrics
	// BackendChoice names the backend and why it serves ("crun (auto:
	// root, crun 1.8.1, local Docker overlay2)", "docker (configured)").
	BackendChoice string
	// Replica names this server in the records it shares with others.
	Replica string
	// OnToolCall, if set, sees every finished tool call beside the audit
	// log and the metrics (bench times the tool handler with it).
	OnToolCall func(context.Context, mcpserver.ToolCall)
}

// Options say how the server is reached and watched.
type Options struct {
	// HTTPAddr is the Streamable HTTP listener's HOST:PORT; empty serves
	// MCP on stdio.
	HTTPAddr string
	// Tokens are the bearer tokens HTTP requests may carry.
	Tokens []config.Token
	// Audit, when set, receives a line per audited tool call and egress
	// connection.
	Audit *audit.Log
	// Version is the server's version in the MCP handshake.
	Version string
}

// Server is one MCP server on its engine.
type Server struct {
	cfg     config.Config
	reg     *languages.Registry
	backend sandbox.Backend
	engine  *engine.Engine
	store   store.Store
	gate    *gate.Gate
	// builds is the background image builder, which Start starts after
	// the engine that waits on it is made.
	builds        *images.Builds
	log           *slog.Logger
	metrics       *metrics.Metrics
	backendChoice string
	replica       string
	onToolCall    func(context.Context, mcpserver.ToolCall)
	opts          Options
	// instance names this server on the sandboxes its engine makes
	// (engine.WithInstance), so that its shutdown removes those and no
	// other server's of the process.
	instance string
	// addr is the HTTP listener's address once Start has bound it.
	addr net.Addr

	execs    *executions.Manager
	sess     *sessions.Manager
	codeMode *codemode.Broker // nil without code_mode.servers
	mcp      *mcp.Server
	// served receives the transport's end: a cancelled context, a stdio
	// client gone, a listener that failed.
	served         chan error
	stopAfterGrace func() bool
}

// New returns a server of parts and its engine; nothing starts before
// Start.
func New(parts Parts, opts Options) *Server {
	log := parts.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := parts.Store
	if st == nil {
		st = store.NewMemory()
	}
	g := parts.Gate
	if g == nil {
		g = gate.New(parts.Config, parts.Registry, gate.Options{Store: st, Logger: log})
	}
	s := &Server{cfg: parts.Config, reg: parts.Registry, backend: parts.Backend, store: st, gate: g, builds: &images.Builds{},
		log: log, metrics: parts.Metrics, backendChoice: parts.BackendChoice, replica: parts.Replica, onToolCall: parts.OnToolCall, opts: opts,
		instance: newInstance(), served: make(chan error, 1), stopAfterGrace: func() bool { return false }}
	s.codeMode = s.newCodeMode()
	s.engine = s.newEngine(parts.EngineOptions)
	return s
}

// newInstance is a new server's instance name: random, so that no two
// servers of a process share one.
func newInstance() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return "server-" + hex.EncodeToString(b[:])
}

// newEngine makes the server's engine on its backend (counted by the
// metrics when they are served), its sandboxes named after this server,
// keeping outputs in the server's store, its sandboxes' network through
// the gate, its runs waiting for the images the background builder makes,
// and their tools brokered by code mode.
func (s *Server) newEngine(extra []engine.Option) *engine.Engine {
	sb := s.backend
	opts := []engine.Option{engine.WithInstance(s.instance), engine.WithStore(s.store), engine.WithGate(s.gate), engine.WithImageBuilds(s.builds)}
	if s.metrics != nil {
		sb = s.metrics.Backend(sb)
		opts = append(opts, engine.WithObserver(s.metrics))
	}
	if s.codeMode != nil {
		opts = append(opts, engine.WithToolBroker(s.codeMode))
	}
	return engine.New(s.cfg, s.reg, sb, s.log, append(opts, extra...)...)
}

// Start brings the server up and starts its transport; serving ends when
// ctx does (or, on stdio, when the client leaves, or when the HTTP
// listener fails). An error (a check the backend cannot pass, a store
// that refuses the recovery, a listener that cannot bind) stops the start
// where it is; the caller shuts the server down and returns it. With
// HTTP, the listener is bound when Start returns (URL).
func (s *Server) Start(ctx context.Context) error {
	if err := s.listenMetrics(ctx); err != nil {
		return err
	}
	// The sweep keeps the sandboxes of the sessions the store holds: this
	// server re-attaches to them below.
	if k, ok := s.backend.(interface{ SetKeep(sandbox.Keep) }); ok {
		id, err := store.ID(ctx, s.store)
		if err != nil {
			return err
		}
		k.SetKeep(sandbox.Keep{Store: id, Sandboxes: sessions.Sandboxes(s.store)})
	}
	// The builder starts before the checks (which then name the images it
	// builds) and the warm pool (whose languages it builds start once
	// their image is built).
	building, err := s.startImageBuilds(ctx)
	if err != nil {
		return err
	}
	if err := s.startupChecks(ctx, building); err != nil {
		return err
	}
	go s.sweepLoop(ctx)
	s.engine.StartPool()
	go s.logPool(ctx)
	s.execs = executions.NewManager(s.engine, executions.WithLogger(s.log), executions.WithReplica(s.replica))
	// What a stopped server left running ends as interrupted before
	// anyone can ask for it.
	if err := s.execs.Recover(ctx); err != nil {
		return err
	}
	sessOpts := []sessions.Option{sessions.WithLogger(s.log), sessions.WithReplica(s.replica), sessions.WithGate(s.gate)}
	if s.codeMode != nil {
		sessOpts = append(sessOpts, sessions.WithToolBroker(s.codeMode))
	}
	s.sess = sessions.NewManager(s.engine, sessOpts...)
	s.gate.Observe(s.egressObserver(s.opts.Audit))
	// The sessions a stopped server left are re-attached to (or end)
	// before anyone can ask for them.
	if err := s.sess.Recover(ctx); err != nil {
		return err
	}
	s.watchServer()
	s.mcp = mcpserver.NewServer(mcpserver.Deps{Engine: s.engine, Executions: s.execs, Sessions: s.sess, Gate: s.gate,
		OnToolCall: s.toolObserver(s.opts.Audit), CodeMode: s.codeMode}, s.opts.Version, s.log)

	// Runs in flight get the grace period after a shutdown signal, then
	// they are killed (their results say so).
	grace := s.grace()
	s.stopAfterGrace = context.AfterFunc(ctx, func() {
		s.log.Info("shutting down", "runs_in_flight", len(s.engine.Inflight()), "grace", grace)
		s.engine.DrainPool()
		time.AfterFunc(grace, func() {
			if n := s.engine.CancelAll(); n > 0 {
				s.log.Info("killed runs still in flight at the end of the grace period", "count", n)
			}
		})
	})
	if s.opts.HTTPAddr == "" {
		s.log.Info("serving MCP on stdio")
		if s.cfg.HTTP.HealthSocket != "" {
			s.log.Warn("http.health_socket is served with --http only; a stdio server's health is its client's to see")
		}
		go func() { s.served <- s.mcp.Run(ctx, transport.NewStdio()) }()
		return nil
	}
	serve, err := s.listenHTTP(ctx)
	if err != nil {
		return err
	}
	go func() { s.served <- serve() }()
	return nil
}

// URL is the MCP endpoint of the HTTP listener Start bound
// ("http://127.0.0.1:41234/mcp" for an HTTPAddr of 127.0.0.1:0); "" on
// stdio or before Start.
func (s *Server) URL() string {
	if s.addr == nil {
		return ""
	}
	return "http://" + s.addr.String() + "/mcp"
}

// Engine is the server's engine, for those in its process that watch it
// or run on it beside MCP (bench's pools and engine-path runs).
func (s *Server) Engine() *engine.Engine { return s.engine }

// Sessions is the server's session manager once Start has made it (nil
// before), for those in its process that watch it (tests that follow a
// session's sandbox).
func (s *Server) Sessions() *sessions.Manager { return s.sess }

// Wait returns when serving ends: nil for a shutdown or a client that
// left, else why the transport stopped.
func (s *Server) Wait() error {
	err := <-s.served
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) grace() time.Duration {
	return time.Duration(s.cfg.ShutdownGraceSeconds) * time.Second
}

// Shutdown stops what Start started (as far as it got): runs in flight
// see their contexts end, their sandboxes are killed and removed;
// executions end as interrupted, sessions close, the warm pool drains,
// and the sandboxes this server made are removed, all within the grace
// period and shutdownGrace. Other servers of the process keep theirs.
func (s *Server) Shutdown() {
	defer s.stopAfterGrace()
	wctx, cancel := context.WithTimeout(context.Background(), s.grace()+shutdownGrace)
	defer cancel()
	if err := s.engine.Wait(wctx); err != nil {
		s.engine.CancelAll()
	}
	if s.execs != nil {
		s.execs.Shutdown(wctx)
	}
	if s.sess != nil {
		s.sess.Shutdown()
	}
	if err := s.engine.Wait(wctx); err != nil {
		s.log.Warn("shutdown", "err", err)
	}
	if err := s.engine.Close(wctx); err != nil {
		s.log.Warn("shutdown", "err", err)
	}
	if s.codeMode != nil {
		s.codeMode.Close()
	}
	if n, err := s.backend.RemoveOwn(wctx, s.instance); err == nil && n > 0 {
		s.log.Info("removed sandboxes at shutdown", "count", n)
	}
}
