package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/metrics"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/kubernetes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// stack is everything a command that runs code needs.
type stack struct {
	cfg     config.Config
	reg     *languages.Registry
	backend sandbox.Backend
	// engine runs a one-shot command's code; serve's server makes its own
	// (internal/server) of the parts below, and this is nil.
	engine *engine.Engine
	// engineOpts are the engine's options of this backend and store: its
	// runtime versions, the shared quota.
	engineOpts []engine.Option
	// gate makes the engine's and the sessions' egress proxies.
	gate *gate.Gate
	log  *slog.Logger
	// metrics is nil unless the configuration serves them.
	metrics *metrics.Metrics
	// store holds the state that outlives a request: serve's is the
	// configured store, the one-shot commands' is in memory.
	store store.Store
	// backendChoice names the backend and why it serves ("crun (auto:
	// root, crun 1.8.1, local Docker overlay2)", "docker (configured)").
	backendChoice string
	// replica names this server in the records it shares with others:
	// made once, so every manager and the peer directory agree on it.
	replica string
}

// parts are what a server is made of.
func (s *stack) parts() server.Parts {
	return server.Parts{Config: s.cfg, Registry: s.reg, Backend: s.backend, Store: s.store, Gate: s.gate,
		EngineOptions: s.engineOpts, Log: s.log,
		Metrics: s.metrics, BackendChoice: s.backendChoice, Replica: s.replica}
}

func (s *stack) Close() {
	_ = s.backend.Close()
	if s.store != nil {
		_ = s.store.Close()
	}
}

// dockerBackend returns the backend for the commands that inspect Docker
// itself (doctor, bench).
func (s *stack) dockerBackend() (*docker.Backend, error) {
	b, ok := s.backend.(*docker.Backend)
	if !ok {
		return nil, fmt.Errorf("this command needs the Docker sandbox backend, not %s: pass --backend docker", s.backendChoice)
	}
	return b, nil
}

// agentBinaryName is the standalone agent that `make build` puts beside
// this binary: it starts in a fraction of the time and memory this binary
// needs (no MCP, Docker client or CLI packages to initialise).
const agentBinaryName = "mcp-code-runner-agent"

// agentPath returns the agent binary to mount: the configured one, else the
// standalone agent beside this executable, else this executable itself (its
// hidden agent subcommand; built static by `make build`). Off Linux, only
// the configured one will do (hostagent.go).
func agentPath(cfg config.Config) (string, error) {
	if cfg.AgentPath != "" {
		return filepath.Abs(cfg.AgentPath)
	}
	if err := hostAgentUsable(); err != nil {
		return "", err
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding this executable for the sandbox agent: %w", err)
	}
	exe, err = filepath.EvalSymlinks(exe)
	if err != nil {
		return "", fmt.Errorf("finding this executable for the sandbox agent: %w", err)
	}
	return agentBeside(exe), nil
}

// agentBeside returns the standalone agent beside exe, or exe.
func agentBeside(exe string) string {
	if beside := filepath.Join(filepath.Dir(exe), agentBinaryName); isExecutable(beside) {
		return beside
	}
	return exe
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0
}

// shareAgent copies the agent binary into dir under a name that holds its
// content's hash (servers of other versions can share the directory), and
// makes dir the temporary directory, where the agents' sockets are made:
// both must be at paths the Docker daemon sees too.
func shareAgent(agent, dir string) (string, error) {
	fail := func(err error) (string, error) {
		return "", fmt.Errorf("shared_dir %s: %w; it must be a writable directory at the same path for this server and the Docker daemon (see docs/OPERATORS.md#running-the-server-in-a-container)", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return fail(err)
	} else if !fi.IsDir() {
		return fail(errors.New("not a directory"))
	}
	data, err := os.ReadFile(agent)
	if err != nil {
		return fail(err)
	}
	sum := sha256.Sum256(data)
	dst := filepath.Join(dir, agentBinaryName+"-"+hex.EncodeToString(sum[:6]))
	if fi, err := os.Stat(dst); err != nil || fi.Size() != int64(len(data)) { // dst is in the operator's shared_dir
		tmp, err := os.CreateTemp(dir, ".agent-*")
		if err != nil {
			return fail(err)
		}
		_, werr := tmp.Write(data)
		if cerr := tmp.Close(); werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o755)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), dst) // dst is in the operator's shared_dir
		}
		if werr != nil {
			_ = os.Remove(tmp.Name())
			return fail(werr)
		}
	}
	if err := os.Setenv("TMPDIR", dir); err != nil {
		return fail(err)
	}
	return dst, nil
}

// newStack builds the engine on the configured backend from the global
// options, for a one-shot command: its state lives in memory and ends with
// it, so it runs beside a server on the same data directory.
func newStack(g *globalOptions) (*stack, error) { return buildStack(g, false, false) }

// newServingStack builds the engine for serve, on the configured state
// store. The store is opened first: one that is down or refused (the data
// directory held by another server, a file that is not ours, etcd
// unreachable) stops the server before anything starts. A stdio server
// with no data_dir set keeps its state in memory: it belongs to the one
// MCP client that started it, and every client (every editor window)
// starts its own, which one default directory would refuse.
func newServingStack(g *globalOptions, stdio bool) (*stack, error) { return buildStack(g, true, stdio) }

func buildStack(g *globalOptions, serving, stdio bool) (*stack, error) {
	cfg, reg, err := g.load()
	if err != nil {
		return nil, err
	}
	log := g.logger()
	var state store.Store = store.NewMemory()
	switch {
	case !serving:
	case stdio && cfg.DataDir == "" && cfg.Store.Backend != config.StoreEtcd:
		log.Info("state store: memory (a stdio server without data_dir keeps its state for its client's lifetime; set data_dir to keep it across restarts)")
	default:
		if state, err = store.Open(cfg); err != nil {
			return nil, fmt.Errorf("state store: %w", err)
		}
		log.Info("state store: " + state.Describe())
	}
	st, err := backendStack(cfg, reg, log, state)
	if err != nil {
		_ = state.Close()
		return nil, err
	}
	if !serving {
		st.engine = st.oneShotEngine()
	}
	return st, nil
}

// backendStack makes the configured sandbox backend and what an engine on
// it is made of.
func backendStack(cfg config.Config, reg *languages.Registry, log *slog.Logger, state store.Store) (*stack, error) {
	st, err := chosenBackendStack(cfg, reg, log, state)
	if err != nil {
		return nil, err
	}
	// The secrets' values come from the server's environment or files,
	// read once here; a secret that cannot be read stops the start.
	if err := st.gate.LoadSecrets(os.Getenv); err != nil {
		st.Close()
		return nil, err
	}
	log.Info("backend: " + st.backendChoice)
	return st, nil
}

// chosenBackendStack makes the sandbox backend cfg names, or the one
// "auto" chooses, and the engine on it.
func chosenBackendStack(cfg config.Config, reg *languages.Registry, log *slog.Logger, state store.Store) (*stack, error) {
	switch cfg.Backend {
	case "", config.BackendAuto:
		backend, choice, err := autoBackend(cfg, log)
		if err != nil {
			return nil, err
		}
		st := stackOn(cfg, reg, log, backend, state, engine.WithRuntimeVersions(images.NewLocalVersions(dockerClientOf(backend), reg)))
		st.backendChoice = choice
		return st, nil
	case config.BackendKubernetes:
		// A pod per sandbox in the configured namespace; the images live
		// on the nodes, so no local versions are read.
		backend, err := newKubernetesBackend(cfg, log)
		if err != nil {
			return nil, err
		}
		st := stackOn(cfg, reg, log, backend, state)
		st.backendChoice = "kubernetes (configured)"
		return st, nil
	case config.BackendCrun:
		// Containers the server starts itself, from Docker's images.
		backend, err := newCrunBackend(cfg, log)
		if err != nil {
			return nil, err
		}
		st := stackOn(cfg, reg, log, backend, state, engine.WithRuntimeVersions(images.NewLocalVersions(backend.Client(), reg)))
		st.backendChoice = "crun (configured)"
		return st, nil
	}
	backend, err := newDockerBackend(cfg, log)
	if err != nil {
		return nil, err
	}
	st := stackOn(cfg, reg, log, backend, state, engine.WithRuntimeVersions(images.NewLocalVersions(backend.Client(), reg)))
	st.backendChoice = "docker (configured)"
	return st, nil
}

// dockerClientOf returns the Docker client whose images backend runs (the
// docker and crun backends both take theirs from the Docker daemon).
func dockerClientOf(backend sandbox.Backend) *client.Client {
	return backend.(interface{ Client() *client.Client }).Client()
}

// stackOn gathers what an engine on backend is made of: the gate of its
// sandboxes' network, its options, and the metrics when the configuration
// serves them.
func stackOn(cfg config.Config, reg *languages.Registry, log *slog.Logger, backend sandbox.Backend, state store.Store, opts ...engine.Option) *stack {
	st := &stack{cfg: cfg, reg: reg, backend: backend, log: log, store: state, replica: replicaName(cfg)}
	if cfg.Metrics.Enabled() {
		st.metrics = metrics.New(metrics.Options{MaxPrincipals: cfg.Metrics.MaxPrincipals})
	}
	st.gate = gate.New(cfg, reg, gate.Options{Store: state, Logger: log})
	// On a store that replicas share, the principals' quota places are
	// there too.
	st.engineOpts = append(slices.Clip(opts), replicas.SharedQuota(state, log))
	return st
}

// oneShotEngine makes the engine of a one-shot command (run, doctor,
// bench): outputs in the stack's store, the network through its gate.
func (s *stack) oneShotEngine() *engine.Engine {
	opts := append([]engine.Option{engine.WithStore(s.store), engine.WithGate(s.gate)}, s.engineOpts...)
	return engine.New(s.cfg, s.reg, s.backend, s.log, opts...)
}

// newCrunBackend makes the crun backend with the agent and a client of the
// configured Docker daemon, whose images it runs.
func newCrunBackend(cfg config.Config, log *slog.Logger) (*crun.Backend, error) {
	cli, err := dockerengine.NewClient(cfg.DockerHost)
	if err != nil {
		return nil, err
	}
	agent, err := agentPath(cfg)
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	// The standalone agent is also CRIU's tar; this binary, whose start
	// costs more than GNU tar's, is not.
	criuTar := ""
	if filepath.Base(agent) == agentBinaryName {
		criuTar = agent
	}
	backend, err := crun.New(cli, crun.Options{AgentPath: agent, CheckpointTools: cfg.Sessions.CheckpointTools, CRIUTar: criuTar,
		Runsc: cfg.GVisor.Runsc, RunscPlatform: cfg.GVisor.Platform, FavorCgroupChanges: cfg.FavorCgroupChanges, Logger: log})
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return backend, nil
}

// newDockerBackend connects to the configured Docker daemon and makes the
// backend with the agent (shared through shared_dir when one is set).
func newDockerBackend(cfg config.Config, log *slog.Logger) (*docker.Backend, error) {
	cli, err := dockerengine.NewClient(cfg.DockerHost)
	if err != nil {
		return nil, err
	}
	agent, err := agentPath(cfg)
	if err == nil && cfg.SharedDir != "" {
		agent, err = shareAgent(agent, cfg.SharedDir)
	}
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	backend, err := docker.New(cli, docker.Options{AgentPath: agent, AgentDelivery: cfg.AgentDelivery, Runtime: cfg.Runtime,
		GVisorRuntime:         cfg.GVisor.DockerRuntime,
		AllowUnenforcedLimits: cfg.AllowUnenforcedLimits, Logger: log})
	if err != nil {
		_ = cli.Close()
		return nil, err
	}
	return backend, nil
}

// newKubernetesBackend makes the kubernetes backend from the configured
// kubeconfig (or the in-cluster configuration) and namespace.
func newKubernetesBackend(cfg config.Config, log *slog.Logger) (*kubernetes.Backend, error) {
	rc, err := kubernetes.RESTConfig(cfg.Kubernetes)
	if err != nil {
		return nil, err
	}
	opts, err := kubernetes.OptionsFrom(cfg.Kubernetes, cfg.GVisor.RuntimeClassName, log)
	if err != nil {
		return nil, err
	}
	backend, err := kubernetes.New(rc, opts)
	if err != nil {
		return nil, err
	}
	return backend, nil
}
