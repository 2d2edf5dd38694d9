package engine

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
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

// WithGate makes the runs' egress proxies (and the package installer's)
// those of g, which the sessions of the same server share: its secrets,
// approvals and observer. Without it the engine makes a gate of its own
// from its configuration, with no secrets and nobody observing.
func WithGate(g *gate.Gate) Option {
	return func(e *Engine) { e.gate = g }
}

// WithStore keeps the engine's full outputs and artifacts in st, the state
// every replica shares; without it they live in this process's memory
// ([store.Memory]), as the fast tests and the bench want.
func WithStore(st store.Store) Option {
	return func(e *Engine) { e.state = st }
}

// WithInstance names the server the engine's sandboxes are made for, in
// their templates (sandbox.Template.Instance): that server's shutdown
// removes its own sandboxes and leaves those of the other servers in its
// process. Without it the name is "", an engine no server runs.
func WithInstance(name string) Option {
	return func(e *Engine) { e.instance = name }
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
	outputs   *outputs.Store
	artifacts *outputs.Store
	slots     chan struct{}
	pool      *pool.Pool // nil: cold path only
	log       *slog.Logger
	obs       Observer

	inflight sync.WaitGroup
	removals sync.WaitGroup // cold sandboxes being removed after their run
	runsMu   sync.Mutex
	runs     map[string]RunInfo
	cancels  map[string]context.CancelCauseFunc

	quotaMu sync.Mutex
	running map[string]int // principal name -> run slots held
	places  RunPlaces      // nil: running counts them, in this process

	gate *gate.Gate // the runs' egress proxies

	imageBuilds ImageBuilds // nil: no image is built in the background

	toolBroker ToolBroker // nil: no run may name tools (code mode)

	instance string // the server the sandboxes are made for (WithInstance)

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
		cancels:  map[string]context.CancelCauseFunc{},
	}
	for _, o := range opts {
		o(e)
	}
	if e.state == nil {
		e.state = store.NewMemory()
	}
	if e.imageBuilds != nil {
		e.imageBuilds.OnBuilt(e.imageBuilt)
	}
	if e.gate == nil {
		e.gate = gate.New(cfg, reg, gate.Options{Store: e.state, Logger: log})
	}
	e.outputs = outputs.Runs(cfg, e.state)
	e.artifacts = outputs.Artifacts(cfg, e.state)
	return e
}

// Registry returns the language registry.
func (e *Engine) Registry() *languages.Registry { return e.reg }

// Config returns the operator configuration.
func (e *Engine) Config() config.Config { return e.cfg }

// Store returns the state store the engine keeps outputs and artifacts in,
// which the executions and tasks above it share.
func (e *Engine) Store() store.Store { return e.state }

// Backend returns the sandbox backend.
func (e *Engine) Backend() sandbox.Backend { return e.backend }

// Runtime is a language's runtime as this server has it: what its image
// recorded when it was built, and where its background build stands.
type Runtime struct {
	// Version is the runtime version recorded when the image was built;
	// "" when the image is missing or has none.
	Version string
	// Packages are the packages preinstalled (names to versions); nil
	// when the image is missing or has none. The map is shared: callers
	// must not change it.
	Packages map[string]string
	// ImageState is the image's state in the background build (see
	// ImageBuilds.ImageState: building, queued or failed) and ImageDetail
	// its detail; "" when runs need not wait for it.
	ImageState, ImageDetail string
}

// Runtime returns lang's runtime as this server has it (list_languages,
// `languages`, doctor).
func (e *Engine) Runtime(ctx context.Context, lang languages.Language) Runtime {
	r := Runtime{Version: e.runtimeVersion(ctx, lang), Packages: e.preinstalled(ctx, lang)}
	r.ImageState, r.ImageDetail = e.imageBuild(lang)
	return r
}

// preinstalled returns the packages preinstalled for a language (names to
// versions) as recorded when its image was built, or nil when the image is
// missing or has none.
func (e *Engine) preinstalled(ctx context.Context, lang languages.Language) map[string]string {
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

// runtimeVersion returns the runtime version of a language as recorded when
// its image was built, or "" when the image is missing or has none.
func (e *Engine) runtimeVersion(ctx context.Context, lang languages.Language) string {
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
