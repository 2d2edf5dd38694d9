package engine

import (
	"context"
	"crypto/x509"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// RuntimeVersions finds the runtime version recorded for a language when
// its image was built (images.LocalVersions reads it from the local image
// store).
type RuntimeVersions interface {
	RuntimeVersion(ctx context.Context, lang languages.Language) (string, error)
}

// PreinstalledPackages finds the packages recorded for a language when its
// image was built (images.LocalVersions reads them from the local image
// store). A RuntimeVersions source that implements it makes the language
// list report them.
type PreinstalledPackages interface {
	Preinstalled(ctx context.Context, lang languages.Language) (map[string]string, error)
}

// Option configures an Engine.
type Option func(*Engine)

// WithRuntimeVersions makes results and the language list report runtime
// versions from v; without it they report none.
func WithRuntimeVersions(v RuntimeVersions) Option {
	return func(e *Engine) { e.versionSource = v }
}

// WithEgressResolver makes the egress proxies look names up with r instead
// of the host's resolver (tests: a resolver of their own that records what
// it was asked).
func WithEgressResolver(r egress.Resolver) Option {
	return func(e *Engine) { e.resolver = r }
}

// WithStore keeps the engine's full outputs and artifacts in st, the state
// every replica shares; without it they live in this process's memory
// ([store.Memory]), as the fast tests and the bench want.
func WithStore(st store.Store) Option {
	return func(e *Engine) { e.state = st }
}

// deadlineGrace is added to the stage timeouts for the sandbox's own start
// and stop when the backend bounds its whole life.
const deadlineGrace = 15 * time.Second

// Engine runs requests on a sandbox backend.
type Engine struct {
	cfg       config.Config
	reg       *languages.Registry
	backend   sandbox.Backend
	state     store.Store
	outputs   *OutputStore
	artifacts *OutputStore
	slots     chan struct{}
	pool      *pool.Pool // nil: cold path only
	log       *slog.Logger
	obs       Observer

	inflight sync.WaitGroup
	removals sync.WaitGroup // cold sandboxes being removed after their run
	runsMu   sync.Mutex
	runs     map[string]RunInfo
	cancels  map[string]context.CancelFunc

	egressObs atomic.Pointer[EgressObserver]

	quotaMu sync.Mutex
	running map[string]int // principal name -> run slots held
	places  RunPlaces      // nil: running counts them, in this process

	resolver egress.Resolver // nil: the host's

	approvals *approval.Approvals // the hosts each principal's user approved

	secrets       map[string]boundSecret // the operator's, by name; see LoadSecrets
	ca            *egress.CA             // terminates the tunnels to the secrets' hosts
	caBundle      []byte                 // the host's roots and the CA, for a run with secrets
	upstreamRoots *x509.CertPool         // nil: the system's

	imageBuilds ImageBuilds // nil: no image is built in the background

	toolBroker ToolBroker // nil: no run may name tools (code mode)

	versionSource RuntimeVersions // nil: none reported
	versionsMu    sync.Mutex
	versions      map[string]string            // language -> runtime version
	packages      map[string]map[string]string // language -> preinstalled package -> version
}

// New returns an engine.
func New(cfg config.Config, reg *languages.Registry, backend sandbox.Backend, log *slog.Logger, opts ...Option) *Engine {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	e := &Engine{
		cfg:      cfg,
		reg:      reg,
		backend:  backend,
		running:  map[string]int{},
		slots:    make(chan struct{}, cfg.MaxConcurrentRuns),
		log:      log,
		obs:      nopObserver{},
		versions: map[string]string{},
		packages: map[string]map[string]string{},
		runs:     map[string]RunInfo{},
		cancels:  map[string]context.CancelFunc{},
	}
	for _, o := range opts {
		o(e)
	}
	if e.state == nil {
		e.state = store.NewMemory()
	}
	e.approvals = approval.New(e.state, time.Duration(cfg.Network.ApprovalTTLSeconds)*time.Second, nil)
	e.outputs = NewOutputStore(e.state, "outputs", cfg.OutputStoreMB<<20, cfg.Quotas.OutputStoreMB<<20, cfg.OutputRetention())
	e.artifacts = NewOutputStore(e.state, "artifacts", cfg.Artifacts.StoreMB<<20, cfg.Quotas.ArtifactStoreMB<<20, time.Duration(cfg.Artifacts.RetentionSeconds)*time.Second)
	return e
}

// Registry returns the language registry.
func (e *Engine) Registry() *languages.Registry { return e.reg }

// Config returns the operator configuration.
func (e *Engine) Config() config.Config { return e.cfg }

// Outputs returns the store of full outputs.
func (e *Engine) Outputs() *OutputStore { return e.outputs }

// Store returns the state store the engine keeps outputs and artifacts in,
// which the executions and tasks above it share.
func (e *Engine) Store() store.Store { return e.state }

// Backend returns the sandbox backend.
func (e *Engine) Backend() sandbox.Backend { return e.backend }

// Preinstalled returns the packages preinstalled for a language (names to
// versions) as recorded when its image was built, or nil when the image is
// missing or has none. The result is shared: callers must not change it.
func (e *Engine) Preinstalled(ctx context.Context, lang languages.Language) map[string]string {
	e.versionsMu.Lock()
	p, ok := e.packages[lang.Name]
	e.versionsMu.Unlock()
	if ok {
		return p
	}
	src, ok := e.versionSource.(PreinstalledPackages)
	if !ok {
		return nil
	}
	// An image that answered is remembered, with or without packages; a
	// missing one is asked again next time (it may be built meanwhile).
	p, err := src.Preinstalled(ctx, lang)
	if err == nil {
		e.versionsMu.Lock()
		e.packages[lang.Name] = p
		e.versionsMu.Unlock()
	}
	return p
}

// RuntimeVersion returns the runtime version of a language as recorded when
// its image was built, or "" when the image is missing or has none.
func (e *Engine) RuntimeVersion(ctx context.Context, lang languages.Language) string {
	e.versionsMu.Lock()
	v, ok := e.versions[lang.Name]
	e.versionsMu.Unlock()
	if ok {
		return v
	}
	if e.versionSource == nil {
		return ""
	}
	v, err := e.versionSource.RuntimeVersion(ctx, lang)
	if err == nil && v != "" {
		e.versionsMu.Lock()
		e.versions[lang.Name] = v
		e.versionsMu.Unlock()
	}
	return v
}
