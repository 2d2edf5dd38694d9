package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/bench"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func init() { subcommands = append(subcommands, newBenchCmd) }

// benchHelp says what bench measures and how to read its figures.
const benchHelp = `Bench measures in one run, on this machine: a hello world as a plain
process on the host; in a cold sandbox (create, start, run, remove); in a
warm pooled sandbox through the engine and through MCP Streamable HTTP
(run_code over loopback); the daemon's container churn ceiling; sustained
load from concurrent MCP clients; the memory of idle warm containers; and
two bursts of concurrent runs against a pool that grows while runs wait.

Warm latency is measured with a warm sandbox ready before each run, so it
shows what one run costs; how fast the pool refills under load is what the
sustained load figures show. Figures from one run compare with each other;
on a shared machine, compare ratios across runs.`

// benchExamples are bench's common runs.
const benchExamples = `  mcp-code-runner bench
  mcp-code-runner bench --runs 50 --load-for 0
  mcp-code-runner bench --json before.json
  mcp-code-runner bench --compare before.json
  mcp-code-runner bench --runtimes runc,crun
  mcp-code-runner bench --isolations container,gvisor --languages python,javascript
  mcp-code-runner bench --agent-deliveries bind,volume --churn-for 0 --load-for 0
  mcp-code-runner bench --backends docker,crun --languages python
  mcp-code-runner bench --servers http://127.0.0.1:8080/mcp,http://127.0.0.1:8081/mcp --runs 200 --think 500ms
  mcp-code-runner bench --backends docker,kubernetes --kubernetes-kubeconfig ~/.kube/config \
    --kubernetes-namespace mcp-code-runner-sandboxes --kubernetes-agent-image IMAGE`

func newBenchCmd(g *globalOptions) *cobra.Command {
	o := bench.Options{Out: os.Stdout}
	var langs, cpuProfile, backends, runtimes, deliveries, vary, servers, token, isolations string
	var think time.Duration
	var warmup int
	var codeModeServer string
	cmd := &cobra.Command{
		Use:     "bench",
		Short:   "Measure bare, cold and warm runs, churn, sustained load and memory side by side",
		Long:    benchHelp,
		Example: benchExamples,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if servers != "" {
				_, reg, err := g.load()
				if err != nil {
					return err
				}
				return bench.Servers(cmd.Context(), reg, bench.ServersOptions{
					URLs: strings.Split(servers, ","), Languages: strings.Split(langs, ","),
					Runs: o.Runs, Warmup: warmup, Think: think, Token: token, Out: o.Out,
				})
			}
			if codeModeServer != "" {
				return benchCodeMode(cmd.Context(), g, strings.Fields(codeModeServer), o)
			}
			if vary != "" {
				return compareSettings(cmd.Context(), g, vary, strings.Split(langs, ","), o)
			}
			if isolations != "" {
				return compareIsolations(cmd.Context(), g, strings.Split(isolations, ","), strings.Split(langs, ","), o)
			}
			if backends != "" {
				return compareBackends(cmd.Context(), g, strings.Split(backends, ","), strings.Split(langs, ","), o)
			}
			if runtimes != "" {
				return compareRuntimes(cmd.Context(), g, strings.Split(runtimes, ","), o, func(c *config.Config, name string) { c.Runtime = name })
			}
			if deliveries != "" {
				o.Varying = "agent delivery"
				return compareRuntimes(cmd.Context(), g, strings.Split(deliveries, ","), o, func(c *config.Config, name string) { c.AgentDelivery = name })
			}
			return runBench(cmd.Context(), g, strings.Split(langs, ","), cpuProfile, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&langs, "languages", "python,javascript,bash", "languages to measure, comma-separated")
	f.IntVar(&o.Runs, "runs", 100, "bare and warm runs per language")
	f.IntVar(&o.ColdRuns, "cold-runs", 20, "cold runs per language")
	f.IntVar(&o.PoolSize, "bench-pool-size", 4, "warm containers per language")
	f.DurationVar(&o.ChurnFor, "churn-for", 20*time.Second, "how long to measure the container churn ceiling (0 skips churn and load)")
	f.IntVar(&o.ChurnLoops, "churn-loops", 4, "parallel create/start/wait/remove loops for the churn ceiling")
	f.DurationVar(&o.LoadFor, "load-for", 60*time.Second, "how long to run the sustained load (0 skips it)")
	f.IntVar(&o.LoadClients, "load-clients", 8, "concurrent MCP clients in the sustained load")
	f.StringVar(&o.LoadLanguage, "load-language", "", "language of the sustained load and the burst (default: the language registry's load language, roles.load)")
	f.StringVar(&o.JSONOut, "json", "", "also write the latency rows and the breakdown to this file as JSON (for --compare later)")
	f.StringVar(&o.Compare, "compare", "", "a file an earlier run wrote with --json: print this run's p50 and p99 against it, as ratios")
	f.IntVar(&o.StoreRuns, "store-runs", 50, "runs per path and state store (memory, embedded, etcd when a binary is at hand) of the state store's table (0 skips it)")
	f.DurationVar(&o.ReplicaLoadFor, "replica-load-for", 30*time.Second, "how long to run the sustained load against one server and then two replicas sharing an etcd store (0 skips it)")
	f.IntVar(&o.ManySessions, "many-sessions", 0, "create this many Python sessions, use each, let the reaper pause them after a second idle, and call each again (on the crun backend with checkpoints where the host has them): memory and disk per session, the answers' correctness and the time to each first answer after a pause (0 skips it; the issue's figure is 1000)")
	f.IntVar(&o.Burst, "burst", 50, "concurrent runs in each of the two bursts against a growing pool (0 skips them)")
	f.StringVar(&backends, "backends", "", "compare run_code on these backends side by side instead (default,docker,crun,kubernetes; default is what serve chooses with no backend set: cold and warm, --runs and --cold-runs each; then each backend's sandbox churn, cold runs of --load-language and the sustained load, unless --churn-for and --load-for are 0)")
	f.StringVar(&isolations, "isolations", "", "compare isolations side by side instead (container,gvisor) on the default backend: run_code through MCP, cold and warm, --runs and --cold-runs each; the memory of idle warm sandboxes; fork, pause and resume of a session and the memory of idle sessions; then each one's sandbox churn, cold runs of --load-language and the sustained load, unless --churn-for and --load-for are 0")
	f.StringVar(&runtimes, "runtimes", "", "compare OCI runtimes side by side instead (runc,crun: churn ceiling, --cold-runs cold runs and the sustained load of --load-language under each)")
	f.StringVar(&deliveries, "agent-deliveries", "", "compare agent deliveries side by side instead (bind,volume: like --runtimes, under the configured runtime)")
	f.StringVar(&vary, "vary", "", "compare values of one setting side by side instead (SETTING=V1,V2: run_code through MCP, cold and warm, like --backends, on the Docker backend; for example pool.release_grace_ms=0,30)")
	f.StringVar(&servers, "servers", "", "time run_code against these running servers side by side instead (URL,URL,...: their MCP endpoints; calls take turns, --runs each per language, --think before each), e.g. two builds of the server")
	f.DurationVar(&think, "think", 500*time.Millisecond, "with --servers: the pause before each call, as a model's turn")
	f.IntVar(&warmup, "warmup", 10, "with --servers: untimed calls to each server first, per language")
	f.StringVar(&token, "token", "", "with --servers: a bearer token for servers that require one")
	f.StringVar(&codeModeServer, "code-mode-server", "", `measure code mode instead: read 20 files of this filesystem MCP server (its command, e.g. "node e2e/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"; the files' directory is added) and add their numbers, as 20 tools/call straight to it and as one run_code (python) with code mode, --runs times each: result bytes the client gets, wall time, and the broker's overhead per call`)
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the server and client side (go tool pprof) to this file")
	g.addSettingFlags(cmd)
	return cmd
}

// runBench measures bare, cold and warm runs of langs on the Docker
// backend (bench.Run), with a CPU profile when cpuProfile names a file.
func runBench(ctx context.Context, g *globalOptions, langs []string, cpuProfile string, o bench.Options) error {
	st, err := checkedStack(ctx, g)
	if err != nil {
		return err
	}
	defer st.Close()
	o.Languages = langs
	if cpuProfile != "" {
		f, err := os.Create(cpuProfile)
		if err != nil {
			return fmt.Errorf("creating the CPU profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("starting the CPU profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	b, err := st.dockerBackend()
	if err != nil {
		return err
	}
	if cb := checkpointBackend(ctx, st.cfg); cb != nil {
		defer cb.Close()
		o.Checkpoints = cb
	}
	return bench.Run(ctx, st.cfg, st.reg, b, o)
}

// benchCodeMode measures code mode against plain tools/call
// (bench.CodeMode) on the configured backend.
func benchCodeMode(ctx context.Context, g *globalOptions, server []string, o bench.Options) error {
	st, err := checkedStack(ctx, g)
	if err != nil {
		return err
	}
	defer st.Close()
	return bench.CodeMode(ctx, st.cfg, st.reg, st.backend, bench.CodeModeOptions{Server: server, Runs: min(o.Runs, 20), Out: o.Out})
}

// checkedStack is the configured stack, its backend checked.
func checkedStack(ctx context.Context, g *globalOptions) (*stack, error) {
	st, err := newStack(g)
	if err != nil {
		return nil, err
	}
	if err := st.backend.Check(ctx); err != nil {
		st.Close()
		return nil, err
	}
	return st, nil
}

// compareRuntimes builds a Docker backend per named runtime from the same
// configuration and measures them side by side.
func compareRuntimes(ctx context.Context, g *globalOptions, names []string, o bench.Options, set func(*config.Config, string)) error {
	cfg, reg, err := g.load()
	if err != nil {
		return err
	}
	log := g.logger()
	var runtimes []bench.Runtime
	defer func() {
		for _, r := range runtimes {
			_ = r.Backend.Close()
		}
	}()
	for _, name := range names {
		c := cfg
		set(&c, name)
		b, err := newDockerBackend(c, log)
		if err != nil {
			return fmt.Errorf("runtime %s: %w", name, err)
		}
		runtimes = append(runtimes, bench.Runtime{Name: name, Backend: b})
		if err := b.Check(ctx); err != nil {
			return fmt.Errorf("runtime %s: %w", name, err)
		}
	}
	return bench.CompareRuntimes(ctx, cfg, reg, runtimes, o)
}

// compareSettings measures one Docker backend under each value of one
// setting (SETTING=V1,V2), side by side.
func compareSettings(ctx context.Context, g *globalOptions, spec string, langs []string, o bench.Options) error {
	name, list, ok := strings.Cut(spec, "=")
	values := strings.Split(list, ",")
	if !ok || name == "" || len(values) < 2 {
		return fmt.Errorf("--vary %q: want SETTING=V1,V2 (at least two values), for example pool.release_grace_ms=0,30", spec)
	}
	cfg, reg, err := g.load()
	if err != nil {
		return err
	}
	b, err := newDockerBackend(cfg, g.logger())
	if err != nil {
		return err
	}
	defer b.Close()
	if err := b.Check(ctx); err != nil {
		return err
	}
	var sides []bench.Backend
	for _, v := range values {
		c := cfg
		if err := config.Set(&c, name, v); err != nil {
			return fmt.Errorf("--vary: %w", err)
		}
		if err := c.Validate(); err != nil {
			return fmt.Errorf("--vary %s=%s: %w", name, v, err)
		}
		sides = append(sides, bench.Backend{Name: name + "=" + v, Sandbox: b, Config: &c})
	}
	return bench.CompareBackends(ctx, cfg, reg, sides, bench.CompareOptions{
		Languages: langs, Runs: o.Runs, ColdRuns: o.ColdRuns, PoolSize: o.PoolSize, Out: o.Out,
	})
}

// compareBackends builds each named backend from the same configuration and
// measures them side by side.
func compareBackends(ctx context.Context, g *globalOptions, names, langs []string, o bench.Options) error {
	cfg, reg, err := g.load()
	if err != nil {
		return err
	}
	log := g.logger()
	var backends []bench.Backend
	defer func() {
		for _, b := range backends {
			_ = b.Sandbox.Close()
		}
	}()
	for _, name := range names {
		var b sandbox.Backend
		switch name {
		case "default", config.BackendAuto:
			// What serve runs with no backend set, named after its choice.
			var choice string
			b, choice, err = autoBackend(cfg, log)
			if err == nil {
				fmt.Fprintf(o.Out, "default backend: %s\n", choice)
				name = "default (" + strings.Fields(choice)[0] + ")"
			}
		case config.BackendDocker:
			b, err = newDockerBackend(cfg, log)
		case config.BackendKubernetes:
			b, err = newKubernetesBackend(cfg, log)
		case config.BackendCrun:
			b, err = newCrunBackend(cfg, log)
		default:
			return fmt.Errorf("--backends: unknown backend %q (want default, docker, kubernetes or crun)", name)
		}
		if err != nil {
			return fmt.Errorf("%s backend: %w", name, err)
		}
		backends = append(backends, bench.Backend{Name: name, Sandbox: b})
		if err := b.Check(ctx); err != nil {
			return fmt.Errorf("%s backend: %w", name, err)
		}
	}
	if err := bench.CompareBackends(ctx, cfg, reg, backends, bench.CompareOptions{
		Languages: langs, Runs: o.Runs, ColdRuns: o.ColdRuns, PoolSize: o.PoolSize, Out: o.Out,
	}); err != nil {
		return err
	}
	if o.ChurnFor <= 0 && o.LoadFor <= 0 {
		return nil
	}
	// Then throughput, side by side: each backend's sandbox churn, cold
	// runs of the load's language taking turns, and the sustained load.
	fmt.Fprintln(o.Out)
	o.Varying = bench.VaryingBackend
	sides := make([]bench.Runtime, len(backends))
	for i, b := range backends {
		sides[i] = bench.Runtime{Name: b.Name, Backend: b.Sandbox}
	}
	return bench.CompareRuntimes(ctx, cfg, reg, sides, o)
}

// checkpointBackend is a crun backend that checkpoints sessions, where
// this host can (crun serves, and the checkpoint tools work), for the
// bench's checkpoint measures; nil elsewhere.
func checkpointBackend(ctx context.Context, cfg config.Config) sandbox.Backend {
	cb, err := newCrunBackend(cfg, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil
	}
	if c, ok := any(cb).(sandbox.Checkpointer); !ok || cb.Check(ctx) != nil || c.CheckpointSupport() != nil {
		_ = cb.Close()
		return nil
	}
	return cb
}

// compareIsolations measures the isolations side by side on the backend
// serve chooses with no backend set (crun here): each side is that backend
// with every sandbox made under one isolation.
func compareIsolations(ctx context.Context, g *globalOptions, names, langs []string, o bench.Options) error {
	cfg, reg, err := g.load()
	if err != nil {
		return err
	}
	var isolations []sandbox.Isolation
	for _, n := range names {
		i, err := sandbox.ParseIsolation(n)
		if err != nil {
			return fmt.Errorf("--isolations: %w", err)
		}
		isolations = append(isolations, i)
	}
	b, choice, err := autoBackend(cfg, g.logger())
	if err != nil {
		return err
	}
	defer b.Close()
	for _, i := range isolations {
		if err := sandbox.IsolationSupport(b, i); err != nil {
			return fmt.Errorf("--isolations: %s on %s: %w", i, choice, err)
		}
	}
	fmt.Fprintf(o.Out, "backend: %s\n", choice)
	sides := bench.IsolationSides(b, isolations)
	if err := bench.CompareBackends(ctx, cfg, reg, sides, bench.CompareOptions{
		Languages: langs, Runs: o.Runs, ColdRuns: o.ColdRuns, PoolSize: o.PoolSize, Out: o.Out,
	}); err != nil {
		return err
	}
	if err := bench.IsolationMemory(ctx, cfg, reg, sides, langs, o.PoolSize, o.Out); err != nil {
		return err
	}
	if err := bench.IsolationSessions(ctx, o.Out, cfg, reg, sides, 5, 3); err != nil {
		return err
	}
	if o.ChurnFor <= 0 && o.LoadFor <= 0 {
		return nil
	}
	fmt.Fprintln(o.Out)
	o.Varying = "isolation"
	runtimes := make([]bench.Runtime, len(sides))
	for i, s := range sides {
		runtimes[i] = bench.Runtime{Name: s.Name, Backend: s.Sandbox}
	}
	return bench.CompareRuntimes(ctx, cfg, reg, runtimes, o)
}
