package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

// Options choose what to measure.
type Options struct {
	Languages    []string
	Runs         int           // warm and bare runs per language
	ColdRuns     int           // cold runs per language
	PoolSize     int           // warm containers per language
	ChurnFor     time.Duration // churn-ceiling measurement
	ChurnLoops   int
	LoadFor      time.Duration // sustained load; 0 skips it
	LoadClients  int
	LoadLanguage string // empty: the registry's load language (roles.load)
	// Burst is the number of concurrent runs of LoadLanguage sent at once,
	// twice, to a pool of PoolSize that may grow to Burst; 0 skips it.
	Burst int
	// JSONOut, if set, is a file the run's rows are written to as JSON;
	// Compare, if set, is such a file of an earlier run, whose rows this
	// run's are compared with.
	JSONOut, Compare string
	// StoreRuns is the number of runs per path and state store of the
	// state store's table; 0 skips it. ReplicaLoadFor is how long the load
	// runs against one server and then two replicas sharing an etcd store;
	// 0 skips it.
	StoreRuns      int
	ReplicaLoadFor time.Duration
	// Varying names what the backends of CompareRuntimes differ in ("OCI
	// runtime" when empty; "agent delivery").
	Varying string
	Out     io.Writer
	// Checkpoints is the crun backend with the checkpoint tools, where the
	// host has them: the session sections measure its checkpointed pauses
	// and restores beside the docker backend's replayed ones.
	Checkpoints sandbox.Backend
	// ManySessions is how many Python sessions the many-sessions section
	// creates, uses, leaves to be paused and calls again, on Checkpoints
	// where there is one (0 skips it).
	ManySessions int
}

// shellLanguage is the language whose image the churn measurements start
// `true` in: the registry's shell role.
func shellLanguage(reg *languages.Registry) (languages.Language, error) {
	l, ok := reg.Lookup(reg.Roles().Shell)
	if !ok {
		return languages.Language{}, fmt.Errorf("the language registry names no shell language (roles.shell) to measure with")
	}
	return l, nil
}

// hello is the program every path runs, by language: the registry's
// example, filled in before a language is measured.
var hello = map[string]string{}

// idleSessions is how many idle sessions the bench holds, then pauses.
const idleSessions = 20

// checkpointedSessions is how many sessions with the data libraries
// imported the checkpoint section pauses and restores.
const checkpointedSessions = 5

// Run measures everything and prints the tables.
func Run(ctx context.Context, cfg config.Config, reg *languages.Registry, b *docker.Backend, o Options) error {
	o.LoadLanguage = cmp.Or(o.LoadLanguage, reg.Roles().Load)
	w := o.Out
	var ref *Report
	if o.Compare != "" {
		// Read first: a run takes minutes, and a wrong path should not
		// cost them.
		r, err := loadReport(o.Compare)
		if err != nil {
			return err
		}
		ref = r
	}
	fmt.Fprintf(w, "mcp-code-runner bench: %s, %d CPUs seen by Go, pool %d per language\n\n", time.Now().UTC().Format(time.RFC3339), numCPU(), o.PoolSize)
	report := Report{Time: time.Now().UTC().Format(time.RFC3339)}
	p, closePaths, err := startPaths(ctx, cfg, reg, b, o)
	if err != nil {
		return err
	}
	defer closePaths()
	if err := p.latencySection(ctx, w, reg, o, &report); err != nil {
		return err
	}
	p.memorySection(ctx, w, b, o)
	if o.Burst > 0 {
		if err := burst(ctx, cfg, reg, b, o, &report); err != nil {
			fmt.Fprintf(w, "burst: %v\n", err)
		}
	}
	if o.ChurnFor > 0 {
		p.churnSection(ctx, w, cfg, reg, b, o, &report)
	}
	if o.Runs > 0 {
		if err := sessionStateSection(ctx, w, cfg, reg, b, o.Checkpoints, min(o.Runs, 10), &report); err != nil {
			fmt.Fprintf(w, "session state: %v\n", err)
		}
		if err := sessionMemorySection(ctx, w, cfg, reg, b, idleSessions, &report); err != nil {
			fmt.Fprintf(w, "idle against paused sessions: %v\n", err)
		}
		if o.Checkpoints != nil {
			if err := restoredSection(ctx, w, cfg, reg, o.Checkpoints, min(o.Runs, 20), &report); err != nil {
				fmt.Fprintf(w, "pause and resume, restored: %v\n", err)
			}
			if err := checkpointSection(ctx, w, cfg, reg, o.Checkpoints, checkpointedSessions, &report); err != nil {
				fmt.Fprintf(w, "checkpoints: %v\n", err)
			}
		}
	}
	if o.ManySessions > 0 {
		var sb sandbox.Backend = b
		if o.Checkpoints != nil {
			sb = o.Checkpoints
		}
		if err := ManySessions(ctx, w, cfg, reg, sb, o.ManySessions, &report); err != nil {
			fmt.Fprintf(w, "many sessions: %v\n", err)
		}
	}
	if o.StoreRuns > 0 {
		if err := stateSection(ctx, w, cfg, reg, b, o, &report); err != nil {
			fmt.Fprintf(w, "state store: %v\n", err)
		}
	}
	if o.JSONOut != "" {
		data, _ := json.MarshalIndent(report, "", "  ")
		if err := os.WriteFile(o.JSONOut, append(data, '\n'), 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", o.JSONOut, err)
		}
	}
	if ref != nil {
		compare(w, report, *ref, o.Compare)
	}
	return nil
}

// paths are the engines, servers and clients the latency tables compare:
// a warm pool and the cold path, each behind its own server's MCP HTTP,
// observed run by run.
type paths struct {
	warm, cold       *engine.Engine
	warmObs, coldObs *lastRun
	coldBackend      *timingBackend
	// cs and coldCS are MCP clients of the warm and cold servers; raw is a
	// minimal client of the warm one; newSession connects another warm
	// client (the sustained load's).
	cs, coldCS *mcp.ClientSession
	raw        *rawClient
	newSession func() (*mcp.ClientSession, error)
}

// startPaths starts a server with the warm pool of the languages measured
// (of a fixed size: the latency tables measure one run, and the burst
// below the growth), one with the cold path (pool size 0), and an MCP
// client of each; the returned function stops them.
func startPaths(ctx context.Context, cfg config.Config, reg *languages.Registry, b *docker.Backend, o Options) (*paths, func(), error) {
	var closers []func()
	closeAll := func() {
		for _, c := range slices.Backward(closers) {
			c()
		}
	}
	p := &paths{warmObs: &lastRun{}, coldObs: &lastRun{}, coldBackend: &timingBackend{Backend: b}}
	coldCfg := cfg
	coldCfg.Pool.Size, coldCfg.Pool.Sizes = 0, nil
	warmCfg := cfg
	warmCfg.Pool.Size, warmCfg.Pool.Sizes = 0, nil
	warmCfg.Pool.MaxSize, warmCfg.Pool.MaxSizes = 0, nil
	for _, lang := range append(append([]string(nil), o.Languages...), o.LoadLanguage) {
		if l, ok := reg.Lookup(lang); ok {
			warmCfg.Pool.Sizes = append(warmCfg.Pool.Sizes, fmt.Sprintf("%s=%d", l.Name, o.PoolSize))
		}
	}
	warmCfg.MaxConcurrentRuns = max(warmCfg.MaxConcurrentRuns, o.LoadClients)
	warm, stopWarm, err := startServer(ctx, server.Parts{Config: warmCfg, Registry: reg, Backend: b,
		EngineOptions: []engine.Option{engine.WithObserver(p.warmObs)}, OnToolCall: p.warmObs.ToolCall})
	if err != nil {
		return nil, nil, err
	}
	closers = append(closers, stopWarm)
	p.warm = warm.Engine()
	p.newSession = func() (*mcp.ClientSession, error) { return connect(ctx, warm.URL()) }
	if p.cs, err = p.newSession(); err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, func() { _ = p.cs.Close() })
	p.raw = newRawClient(warm.URL())

	cold, stopCold, err := startServer(ctx, server.Parts{Config: coldCfg, Registry: reg, Backend: p.coldBackend,
		EngineOptions: []engine.Option{engine.WithObserver(p.coldObs)}, OnToolCall: p.coldObs.ToolCall})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, stopCold)
	p.cold = cold.Engine()
	if p.coldCS, err = connect(ctx, cold.URL()); err != nil {
		closeAll()
		return nil, nil, err
	}
	closers = append(closers, func() { _ = p.coldCS.Close() })
	return p, closeAll, nil
}

// latencySection measures each language's paths run by run, then prints
// the breakdown of one warm and one cold run of each.
func (p *paths) latencySection(ctx context.Context, w io.Writer, reg *languages.Registry, o Options, report *Report) error {
	fmt.Fprintf(w, "## Latency per run (ms), %d warm/bare runs and %d cold runs per language\n\n", o.Runs, o.ColdRuns)
	fmt.Fprintln(w, "| language | path | p50 | p95 | p99 | runs/s | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	// What an MCP request costs by itself over this transport: the floor
	// under every run_code figure below.
	s := toolCallSample(ctx, p.cs, o.Runs)
	fmt.Fprintf(w, "| - | %s | %s | %s | %s | %.1f | %d |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), s.Rate(), s.Errs)
	report.Rows = append(report.Rows, rowOf("-", s))
	var breakdowns [][]breakdownRow
	for _, lang := range o.Languages {
		l, ok := reg.Lookup(lang)
		if !ok {
			return fmt.Errorf("unknown language %q", lang)
		}
		breakdowns = append(breakdowns, p.language(ctx, w, l, o, report))
	}
	for i, bd := range breakdowns {
		if len(bd) > 0 {
			printBreakdown(w, o.Languages[i], bd)
			report.Breakdown = append(report.Breakdown, bd...)
		}
	}
	return nil
}

// language measures l's paths: the bare process and the quiet warm paths
// taking turns, the cold path, and back-to-back MCP runs; it prints their
// rows and ratios and returns the breakdown of one warm and one cold run.
func (p *paths) language(ctx context.Context, w io.Writer, l languages.Language, o Options, report *Report) []breakdownRow {
	lang := l.Name
	if _, ok := hello[lang]; !ok {
		hello[lang] = l.Example // every registry entry carries a hello world
	}
	waitIdle(p.warm, lang, o.PoolSize, time.Minute)
	settle := quietSettle
	if len(l.Prestart) > 0 {
		settle = prestartSettle
	}
	// The bare process and the quiet warm paths take turns, run by run,
	// each after the same wait for a quiet machine (the last run's
	// sandbox removed and replaced), so that the machine's drift (these
	// machines are shared) and its idle wake-up costs affect them alike
	// and their ratios hold within the run.
	quiet := func() { waitQuiet(p.warm, lang, settle) }
	bareTurn := bareSeries(ctx, l)
	if bareTurn != nil {
		bareTurn.before = quiet
	}
	turns := interleave(o.Runs,
		bareTurn,
		&series{"warm sandbox, engine, server quiet", quiet, engineCall(ctx, p.warm, lang)},
		&series{"warm sandbox, MCP HTTP run_code, server quiet", quiet, mcpCall(ctx, p.cs, lang)},
		&series{"warm sandbox, MCP HTTP run_code from a minimal client, server quiet", quiet, rawMCPCall(ctx, p.raw, lang)},
	)
	rows := []*Sample{
		turns[0],
		timedSample("cold sandbox (create, start, run; removed after the answer)", o.ColdRuns, nil, engineCall(ctx, p.cold, lang)),
		turns[1],
		turns[2],
		timedSample("warm sandbox, MCP HTTP run_code, back to back", o.Runs, func() { waitIdle(p.warm, lang, 1, 30*time.Second) }, mcpCall(ctx, p.cs, lang)),
		turns[3],
	}
	for _, s := range rows {
		if s == nil {
			continue
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %.1f | %d |\n", lang, s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), s.Rate(), s.Errs)
		report.Rows = append(report.Rows, rowOf(lang, s))
	}
	// One warm and one cold run, taken apart.
	var bd []breakdownRow
	quiet()
	if r, err := breakdownOf(ctx, p.cs, lang, lang+" warm", p.warmObs, nil); err == nil {
		bd = append(bd, r)
	} else {
		fmt.Fprintf(w, "breakdown of a warm %s run: %v\n", lang, err)
	}
	if r, err := breakdownOf(ctx, p.coldCS, lang, lang+" cold", p.coldObs, p.coldBackend); err == nil {
		bd = append(bd, r)
	} else {
		fmt.Fprintf(w, "breakdown of a cold %s run: %v\n", lang, err)
	}
	if c, m := rows[1], rows[3]; c != nil && m != nil && m.Quantile(.5) > 0 {
		fmt.Fprintf(w, "| %s | **cold / warm-MCP p50** | %.1fx | | | | |\n", lang, float64(c.Quantile(.5))/float64(m.Quantile(.5)))
	}
	if bs, en := rows[0], rows[2]; bs != nil && en != nil && bs.Quantile(.5) > 0 {
		fmt.Fprintf(w, "| %s | **warm-engine / bare p50** | %.2fx | | | | |\n", lang, float64(en.Quantile(.5))/float64(bs.Quantile(.5)))
	}
	if bs, m := rows[0], rows[3]; bs != nil && m != nil && bs.Quantile(.5) > 0 {
		fmt.Fprintf(w, "| %s | **warm-MCP / bare p50** | %.2fx | | | | |\n", lang, float64(m.Quantile(.5))/float64(bs.Quantile(.5)))
	}
	if bs, m := rows[0], rows[5]; bs != nil && m != nil && bs.Quantile(.5) > 0 {
		fmt.Fprintf(w, "| %s | **warm-MCP (minimal client) / bare p50** | %.2fx | | | | |\n", lang, float64(m.Quantile(.5))/float64(bs.Quantile(.5)))
	}
	return bd
}

// memorySection prints what the idle warm containers and this process use.
func (p *paths) memorySection(ctx context.Context, w io.Writer, b *docker.Backend, o Options) {
	fmt.Fprintf(w, "\n## Memory\n\n")
	for _, lang := range o.Languages {
		waitIdle(p.warm, lang, o.PoolSize, time.Minute)
	}
	use, err := poolMemory(ctx, b.Client())
	if err != nil {
		fmt.Fprintf(w, "pool memory: %v\n", err)
	}
	for _, lang := range slices.Sorted(maps.Keys(use)) {
		m := use[lang]
		fmt.Fprintf(w, "- %s: %d idle warm containers use %.1f MiB in all, %.2f MiB each (cgroup memory usage less page cache)\n", lang, m.n, float64(m.bytes)/(1<<20), float64(m.bytes)/float64(m.n)/(1<<20))
	}
	fmt.Fprintf(w, "- server process RSS (with the benchmark client in it): %.1f MiB\n", float64(rss())/(1<<20))
}

// churnSection measures how many containers a second the runtime, the
// Docker CLI and the cold path sustain, then the sustained load through
// MCP HTTP beside them.
func (p *paths) churnSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b *docker.Backend, o Options, report *Report) {
	rate, err := churnCeiling(ctx, b, reg, o.ChurnFor, o.ChurnLoops)
	fmt.Fprintf(w, "\n## Container churn ceiling\n\n")
	if err != nil {
		fmt.Fprintf(w, "churn: %v\n", err)
	} else {
		fmt.Fprintf(w, "- hardened create, start, wait, remove of `true` under %s (the sandboxes' runtime) in %d parallel loops for %s: **%.2f containers/s**\n", runtimeName(ctx, b), o.ChurnLoops, o.ChurnFor, rate)
	}
	// The same with the Docker CLI, as the ceiling is usually measured
	// (`docker run --rm` loops): each container also pays a CLI process
	// and its own API round trips.
	cliRate, err := dockerRunCeiling(ctx, reg, cfg.DockerHost, o.ChurnFor, o.ChurnLoops)
	if err != nil {
		fmt.Fprintf(w, "- `docker run --rm` loops: %v\n", err)
	} else {
		fmt.Fprintf(w, "- plain `docker run --rm --network none IMAGE true` (the Docker CLI) in %d parallel loops for %s: **%.2f containers/s**\n", o.ChurnLoops, o.ChurnFor, cliRate)
	}
	// The same churn with the load's own sandboxes: what a run's
	// container costs beyond `true` (agent, runtime start, the run).
	code := hello[o.LoadLanguage]
	if l, ok := reg.Lookup(o.LoadLanguage); ok && code == "" {
		code = l.Example
	}
	sandboxRate, err := coldCeiling(ctx, p.cold, o.LoadLanguage, code, o.ChurnFor, o.ChurnLoops)
	if err != nil {
		fmt.Fprintf(w, "cold-run churn: %v\n", err)
	} else {
		fmt.Fprintf(w, "- cold %s hello worlds (create, start, run, remove) in %d parallel loops for %s: **%.2f runs/s**\n", o.LoadLanguage, o.ChurnLoops, o.ChurnFor, sandboxRate)
	}
	if o.LoadFor > 0 {
		s := loadSample(ctx, p.newSession, o.LoadLanguage, o.LoadClients, o.LoadFor)
		fmt.Fprintf(w, "\n## Sustained load: %d clients, %s, %s through MCP HTTP\n\n", o.LoadClients, o.LoadFor, o.LoadLanguage)
		fmt.Fprintln(w, "| runs | runs/s | p50 | p95 | p99 | errors | share of `true` API churn | share of `docker run` churn | share of cold-run churn |")
		fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
		share := func(of float64) float64 {
			if of <= 0 {
				return 0
			}
			return s.Rate() / of * 100
		}
		fmt.Fprintf(w, "| %d | %.2f | %s | %s | %s | %d | %.0f%% | %.0f%% | %.0f%% |\n", len(s.Times), s.Rate(), ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), s.Errs, share(rate), share(cliRate), share(sandboxRate))
		s.Name = fmt.Sprintf("sustained load, %d MCP clients", o.LoadClients)
		report.Rows = append(report.Rows, rowOf(o.LoadLanguage, s))
	}
}

// quietSettle lets the daemon finish what follows a removal (unmounts,
// shim exit) before a quiet run starts.
var quietSettle = 100 * time.Millisecond

// prestartSettle is the settle time for a language whose warm sandboxes
// start a compiler ahead of the job (Kotlin's takes about 2 s at one CPU to
// load and warm up); a run that finds it still warming up waits for it, which
// the back-to-back figures show.
var prestartSettle = 3 * time.Second

// waitQuiet waits until lang's pool is full and no sandbox is being made
// or removed: a run then measures its own cost, not the background work of
// the run before (which the load test measures).
func waitQuiet(e *engine.Engine, lang string, settle time.Duration) {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		for _, s := range e.PoolStats() {
			if s.Language == lang && s.Idle >= s.Size && s.Creating == 0 && s.Removing == 0 {
				time.Sleep(settle)
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func waitIdle(e *engine.Engine, lang string, n int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		for _, s := range e.PoolStats() {
			if s.Language == lang && s.Idle >= n {
				return
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// bareSeries runs l's hello world as a plain process on the host
// ([languages.Language.HostRun]); nil when the registry says of no such
// command or the host has no such interpreter.
func bareSeries(ctx context.Context, l languages.Language) *series {
	argv := l.HostRun
	if len(argv) == 0 {
		return nil
	}
	// Prefer the distribution's interpreter: version-manager shims on PATH
	// (pyenv, nvm) add a shell script's start-up to every run.
	if _, err := os.Stat("/usr/bin/" + argv[0]); err == nil {
		argv = append([]string{"/usr/bin/" + argv[0]}, argv[1:]...)
	} else if _, err := exec.LookPath(argv[0]); err != nil {
		return nil
	}
	return &series{name: "bare process on the host", call: func() bool {
		return exec.CommandContext(ctx, argv[0], argv[1:]...).Run() == nil
	}}
}

// series is one path measured: what to wait for before each run (not
// timed), and the run itself, which reports success.
type series struct {
	name   string
	before func()
	call   func() bool
}

// interleave runs the series in turn, one run of each per round, for runs
// rounds; the samples come back in the series' order, nil for a nil series.
func interleave(runs int, all ...*series) []*Sample {
	out := make([]*Sample, len(all))
	for i, sr := range all {
		if sr != nil {
			out[i] = &Sample{Name: sr.name}
		}
	}
	for range runs {
		for i, sr := range all {
			if sr != nil {
				out[i].time(sr.before, sr.call)
			}
		}
	}
	return out
}

func timedSample(name string, runs int, before func(), call func() bool) *Sample {
	s := &Sample{Name: name}
	for range runs {
		s.time(before, call)
	}
	return s
}

// engineCall runs lang's hello world through the engine.
func engineCall(ctx context.Context, e *engine.Engine, lang string) func() bool {
	return func() bool {
		r, err := e.Run(ctx, engine.Request{Language: lang, Code: hello[lang]}, engine.RunOptions{})
		return err == nil && r.Status == engine.StatusOK
	}
}

// mcpCall runs lang's hello world as run_code over the MCP session.
func mcpCall(ctx context.Context, cs *mcp.ClientSession, lang string) func() bool {
	return func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "code": hello[lang]}})
		return err == nil && !res.IsError && okStatus(res)
	}
}

// toolCallSample times calls of list_executions, a tool that reads a small
// in-memory table: what an MCP tool call costs over this transport with no
// sandbox behind it. (The 2026-07-28 era has no ping method.)
func toolCallSample(ctx context.Context, cs *mcp.ClientSession, runs int) *Sample {
	return timedSample("MCP HTTP tools/call of list_executions (no sandbox)", runs, nil, func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_executions", Arguments: map[string]any{}})
		return err == nil && !res.IsError
	})
}

func okStatus(res *mcp.CallToolResult) bool {
	if m, ok := res.StructuredContent.(map[string]any); ok {
		return m["status"] == "ok"
	}
	data, _ := json.Marshal(res.StructuredContent)
	return strings.Contains(string(data), `"status":"ok"`)
}

// loadSample runs clients concurrent MCP sessions back to back for d.
func loadSample(ctx context.Context, session func() (*mcp.ClientSession, error), lang string, clients int, d time.Duration) *Sample {
	return loadSampleOf(ctx, session, lang, hello[lang], clients, d)
}

// loadSampleOf runs clients concurrent MCP sessions, each calling run_code
// of code back to back for d.
func loadSampleOf(ctx context.Context, session func() (*mcp.ClientSession, error), lang, code string, clients int, d time.Duration) *Sample {
	s := &Sample{Name: "load"}
	var mu sync.Mutex
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for range clients {
		wg.Go(func() {
			cs, err := session()
			if err != nil {
				mu.Lock()
				s.Errs++
				mu.Unlock()
				return
			}
			defer cs.Close()
			for time.Now().Before(stop) {
				t := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "code": code}})
				el := time.Since(t)
				mu.Lock()
				if err != nil || res.IsError || !okStatus(res) {
					s.Errs++
				} else {
					s.add(el)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	s.Wall = time.Since(start)
	return s
}

// churnCeiling measures how many hardened containers per second this
// machine's daemon can create, start, wait for and remove, under the OCI
// runtime b gives its sandboxes.
func churnCeiling(ctx context.Context, b *docker.Backend, reg *languages.Registry, d time.Duration, loops int) (float64, error) {
	l, err := shellLanguage(reg)
	if err != nil {
		return 0, err
	}
	cfgTmpl := engine.New(config.Default(), reg, b, nil).Template(l)
	cli := b.Client()
	return parallelRate(d, loops, func() error { return oneContainer(ctx, cli, b, cfgTmpl) })
}

// dockerRunCeiling measures plain `docker run --rm` loops of `true` in the
// bash image, through the Docker CLI, on the daemon at host ("" for the
// CLI's default).
func dockerRunCeiling(ctx context.Context, reg *languages.Registry, host string, d time.Duration, loops int) (float64, error) {
	l, err := shellLanguage(reg)
	if err != nil {
		return 0, err
	}
	cli, err := exec.LookPath("docker")
	if err != nil {
		return 0, fmt.Errorf("no docker CLI on PATH: %w", err)
	}
	image := reg.ImageOf(l).Tag
	return parallelRate(d, loops, func() error {
		cmd := exec.CommandContext(ctx, cli, "run", "--rm", "--network", "none", image, "true")
		if host != "" {
			cmd.Env = append(os.Environ(), "DOCKER_HOST="+host)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("docker run: %w: %s", err, out)
		}
		return nil
	})
}

// coldCeiling runs code in lang on the cold path (a new sandbox per run,
// removed after it) in loops parallel loops for d and returns the runs/s.
func coldCeiling(ctx context.Context, e *engine.Engine, lang, code string, d time.Duration, loops int) (float64, error) {
	return parallelRate(d, loops, func() error {
		_, err := e.Run(ctx, engine.Request{Language: lang, Code: code}, engine.RunOptions{})
		return err
	})
}

// parallelRate calls f in loops parallel loops for d and returns the
// successful calls per second; the first error if none succeeded.
func parallelRate(d time.Duration, loops int, f func() error) (float64, error) {
	var mu sync.Mutex
	count := 0
	var firstErr error
	var wg sync.WaitGroup
	stop := time.Now().Add(d)
	start := time.Now()
	for range loops {
		wg.Go(func() {
			for time.Now().Before(stop) {
				err := f()
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = err
				}
				if err == nil {
					count++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if count == 0 && firstErr != nil {
		return 0, firstErr
	}
	return float64(count) / time.Since(start).Seconds(), nil
}

func oneContainer(ctx context.Context, cli *client.Client, b *docker.Backend, t sandbox.Template) error {
	rt, err := b.Runtime(ctx)
	if err != nil {
		return err
	}
	cfg, host := b.ContainerConfig(t)
	host.Runtime = rt.Name
	cfg.Cmd = []string{"true"}
	cfg.OpenStdin, cfg.StdinOnce, cfg.AttachStdin = false, false, false
	c, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: cfg, HostConfig: host})
	if err != nil {
		return err
	}
	defer func() {
		_, _ = cli.ContainerRemove(context.WithoutCancel(ctx), c.ID, client.ContainerRemoveOptions{Force: true})
	}()
	wait := cli.ContainerWait(ctx, c.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		return err
	}
	_, err = dockerengine.WaitExit(ctx, cli, c.ID, wait)
	return err
}

// poolMemory sums the memory of our idle pooled containers, per language
// (the purpose label). A container removed meanwhile is left out.
func poolMemory(ctx context.Context, cli *client.Client) (map[string]memUse, error) {
	list, err := dockerengine.ListContainers(ctx, cli, client.ContainerListOptions{
		Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+fmt.Sprint(os.Getpid())),
	})
	if err != nil {
		return nil, err
	}
	out := map[string]memUse{}
	for _, c := range list.Items {
		st, err := cli.ContainerStats(ctx, c.ID, client.ContainerStatsOptions{Stream: false})
		if cerrdefs.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		var v container.StatsResponse
		err = json.NewDecoder(st.Body).Decode(&v)
		st.Body.Close()
		if err != nil {
			return nil, err
		}
		used := v.MemoryStats.Usage
		if cache := v.MemoryStats.Stats["cache"]; cache < used { // cgroup v1
			used -= cache
		} else if f := v.MemoryStats.Stats["inactive_file"]; f < used { // cgroup v2
			used -= f
		}
		m := out[c.Labels[docker.LabelPurpose]]
		m.bytes += used
		m.n++
		out[c.Labels[docker.LabelPurpose]] = m
	}
	return out, nil
}

// memUse is the memory of n containers.
type memUse struct {
	bytes uint64
	n     int
}

func rss() uint64 {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		var kb uint64
		if _, err := fmt.Sscanf(line, "VmRSS: %d kB", &kb); err == nil {
			return kb << 10
		}
	}
	return 0
}

// burst sends o.Burst concurrent runs of o.LoadLanguage through MCP HTTP
// at once to a server whose pool for it holds o.PoolSize and may grow to
// o.Burst, waits until the pool has refilled to the size the first burst
// grew it to, and sends a second burst: how many runs of each waited for a
// sandbox to be made (a cold start) and what they took.
func burst(ctx context.Context, cfg config.Config, reg *languages.Registry, b *docker.Backend, o Options, report *Report) error {
	w := o.Out
	l, ok := reg.Lookup(o.LoadLanguage)
	if !ok {
		return fmt.Errorf("unknown language %q", o.LoadLanguage)
	}
	lang := l.Name
	bc := cfg
	bc.Pool.Size, bc.Pool.Sizes = 0, []string{fmt.Sprintf("%s=%d", lang, o.PoolSize)}
	bc.Pool.MaxSize, bc.Pool.MaxSizes = 0, []string{fmt.Sprintf("%s=%d", lang, o.Burst)}
	bc.MaxConcurrentRuns = max(bc.MaxConcurrentRuns, o.Burst)
	bc.Pool.MaxWaiters = max(bc.Pool.MaxWaiters, o.Burst)
	// The first burst waits for most of its sandboxes to be made, on a
	// busy machine: it must not time out.
	bc.QueueTimeoutSeconds = max(bc.QueueTimeoutSeconds, 600)
	// The grown pool refills on the same busy machine before the second
	// burst; it must not shrink meanwhile.
	bc.Pool.ShrinkAfterSeconds = max(bc.Pool.ShrinkAfterSeconds, 600)
	// Its grown pool's sandboxes are removed at its shutdown, within the
	// grace it gives runs in flight (there are none then) and a bound.
	bc.ShutdownGraceSeconds = max(bc.ShutdownGraceSeconds, 300)
	srv, stop, err := startServer(ctx, server.Parts{Config: bc, Registry: reg, Backend: b})
	if err != nil {
		return err
	}
	defer stop()
	e := srv.Engine()
	cs, err := connect(ctx, srv.URL())
	if err != nil {
		return err
	}
	defer cs.Close()
	stat := func() pool.Stat {
		for _, s := range e.PoolStats() {
			if s.Language == lang {
				return s
			}
		}
		return pool.Stat{}
	}
	fmt.Fprintf(w, "\n## Burst: %d concurrent %s runs at once through MCP HTTP, pool %d growing up to %d (shrinking after %d s)\n\n", o.Burst, lang, o.PoolSize, o.Burst, bc.Pool.ShrinkAfterSeconds)
	fmt.Fprintln(w, "| burst | pool size before | runs | waited for a sandbox to be made | p50 | p99 | max | errors | pool size after |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|")
	for i, name := range []string{"first (pool at its configured size)", "second (pool refilled to the size the first grew it to)"} {
		size := stat().Size
		waitIdle(e, lang, size, 10*time.Minute)
		before := stat()
		s := &Sample{Name: name}
		var mu sync.Mutex
		var wg sync.WaitGroup
		start := time.Now()
		for range o.Burst {
			wg.Go(func() {
				t := time.Now()
				ok := mcpCall(ctx, cs, lang)()
				el := time.Since(t)
				mu.Lock()
				defer mu.Unlock()
				if ok {
					s.add(el)
				} else {
					s.Errs++
				}
			})
		}
		wg.Wait()
		s.Wall = time.Since(start)
		after := stat()
		fmt.Fprintf(w, "| %d, %s | %d (%d idle) | %d | %d | %s | %s | %s | %d | %d |\n", i+1, name, before.Size, before.Idle, len(s.Times)+s.Errs,
			after.Waited-before.Waited, ms(s.Quantile(.5)), ms(s.Quantile(.99)), ms(s.Quantile(1)), s.Errs, after.Size)
		s.Name = fmt.Sprintf("burst %d of %d concurrent runs", i+1, o.Burst)
		report.Rows = append(report.Rows, rowOf(lang, s))
		if after.GrowBlocked != "" {
			fmt.Fprintf(w, "\npool could not grow: %s\n", after.GrowBlocked)
		}
	}
	return nil
}

// runtimeName names the OCI runtime b's sandboxes run under, for the report.
func runtimeName(ctx context.Context, b *docker.Backend) string {
	rt, err := b.Runtime(ctx)
	if err != nil || rt.Effective == "" {
		return "the daemon's default runtime"
	}
	return rt.Effective
}
