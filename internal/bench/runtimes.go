package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

// Runtime is one side of a throughput comparison: a Docker backend whose
// sandboxes run under one OCI runtime (or agent delivery), or a sandbox
// backend of its own (Options.Varying "sandbox backend").
type Runtime struct {
	Name    string
	Backend sandbox.Backend
}

// CompareRuntimes measures, for each runtime in one run: the daemon's churn
// ceiling (hardened `true` containers), cold runs of LoadLanguage through the
// engine (the runtimes take turns run by run), and sustained load from
// LoadClients MCP clients through Streamable HTTP with a warm pool of
// PoolSize; then each figure's ratio to the first runtime's.
func CompareRuntimes(ctx context.Context, cfg config.Config, reg *languages.Registry, runtimes []Runtime, o Options) error {
	o.LoadLanguage = cmp.Or(o.LoadLanguage, reg.Roles().Load)
	w := o.Out
	l, ok := reg.Lookup(o.LoadLanguage)
	if !ok {
		return fmt.Errorf("unknown language %q", o.LoadLanguage)
	}
	lang := l.Name
	if _, ok := hello[lang]; !ok {
		hello[lang] = l.Example
	}
	what := o.Varying
	if what == "" {
		what = "OCI runtime"
	}
	fmt.Fprintf(w, "mcp-code-runner bench, %s side by side: %s, %d CPUs seen by Go\n\n", plural(what), time.Now().UTC().Format(time.RFC3339), numCPU())

	results := make([]runtimeResult, len(runtimes))

	churnName := "`true` churn"
	if o.Varying == VaryingBackend {
		churnName = "sandbox create, ready, remove"
	}
	if o.ChurnFor > 0 {
		for i, rt := range runtimes {
			rate, err := sideChurn(ctx, rt.Backend, reg, o)
			if err != nil {
				return fmt.Errorf("churn under %s: %w", rt.Name, err)
			}
			results[i].churn = rate
		}
	}

	coldCfg := cfg
	coldCfg.Pool.Size, coldCfg.Pool.Sizes, coldCfg.Pool.MaxSize, coldCfg.Pool.MaxSizes = 0, nil, 0, nil
	turns := make([]*series, len(runtimes))
	var stops []func()
	stopAll := func() {
		for _, stop := range stops {
			stop()
		}
	}
	for i, rt := range runtimes {
		srv, stop, err := startServer(ctx, server.Parts{Config: coldCfg, Registry: reg, Backend: rt.Backend})
		if err != nil {
			stopAll()
			return fmt.Errorf("cold runs under %s: %w", rt.Name, err)
		}
		stops = append(stops, stop)
		turns[i] = &series{name: "cold " + lang + " under " + rt.Name, call: engineCall(ctx, srv.Engine(), lang)}
	}
	for i, s := range interleave(o.ColdRuns, turns...) {
		results[i].cold = s
	}
	stopAll()

	if o.LoadFor > 0 {
		for i, rt := range runtimes {
			s, err := loadUnder(ctx, cfg, reg, rt.Backend, lang, o)
			if err != nil {
				return fmt.Errorf("load under %s: %w", rt.Name, err)
			}
			results[i].load = s
		}
	}

	printRuntimes(w, what, churnName, lang, runtimes, results, o)
	return nil
}

// runtimeResult is what CompareRuntimes measured of one runtime.
type runtimeResult struct {
	churn float64
	cold  *Sample
	load  *Sample
}

// printRuntimes prints the table of results, one row per runtime, then
// each runtime's ratios to the first.
func printRuntimes(w io.Writer, what, churnName, lang string, runtimes []Runtime, results []runtimeResult, o Options) {
	fmt.Fprintf(w, "| %s | %s, %d loops (sandboxes/s) | cold %s p50 ms | cold p99 ms | load: %d clients, %s (runs/s) | load p50 ms | load p99 ms | errors |\n", what, churnName, o.ChurnLoops, lang, o.LoadClients, o.LoadFor)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	for i, rt := range runtimes {
		r := results[i]
		loadRate, p50, p99, errs := "-", "-", "-", r.cold.Errs
		if r.load != nil {
			loadRate, p50, p99 = fmt.Sprintf("%.2f", r.load.Rate()), ms(r.load.Quantile(.5)), ms(r.load.Quantile(.99))
			errs += r.load.Errs
		}
		fmt.Fprintf(w, "| %s | %.2f | %s | %s | %s | %s | %s | %d |\n", rt.Name, r.churn, ms(r.cold.Quantile(.5)), ms(r.cold.Quantile(.99)), loadRate, p50, p99, errs)
	}
	base := results[0]
	for i := 1; i < len(runtimes); i++ {
		r := results[i]
		ratio := func(a, b float64) string {
			if b <= 0 {
				return "-"
			}
			return fmt.Sprintf("%.2fx", a/b)
		}
		loadRatio, p99Ratio := "-", "-"
		if r.load != nil && base.load != nil {
			loadRatio = ratio(r.load.Rate(), base.load.Rate())
			p99Ratio = ratio(float64(r.load.Quantile(.99)), float64(base.load.Quantile(.99)))
		}
		fmt.Fprintf(w, "| **%s / %s** | %s | %s faster | | %s | | %s | |\n", runtimes[i].Name, runtimes[0].Name,
			ratio(r.churn, base.churn), ratio(float64(base.cold.Quantile(.5)), float64(r.cold.Quantile(.5))), loadRatio, p99Ratio)
	}
}

// loadUnder runs the sustained load against a server of its own on b, with
// a full warm pool of o.PoolSize for lang at the start.
func loadUnder(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, lang string, o Options) (*Sample, error) {
	warmCfg := cfg
	warmCfg.Pool.Size, warmCfg.Pool.Sizes = 0, []string{fmt.Sprintf("%s=%d", lang, o.PoolSize)}
	warmCfg.Pool.MaxSize, warmCfg.Pool.MaxSizes = 0, nil
	warmCfg.MaxConcurrentRuns = max(warmCfg.MaxConcurrentRuns, o.LoadClients)
	srv, stop, err := startServer(ctx, server.Parts{Config: warmCfg, Registry: reg, Backend: b})
	if err != nil {
		return nil, err
	}
	defer stop()
	if err := waitPoolFull(ctx, srv.Engine(), lang, o.PoolSize, 2*time.Minute); err != nil {
		return nil, err
	}
	session := func() (*mcp.ClientSession, error) { return connect(ctx, srv.URL()) }
	return loadSample(ctx, session, lang, o.LoadClients, o.LoadFor), nil
}

// VaryingBackend is Options.Varying when the sides are sandbox backends.
const VaryingBackend = "sandbox backend"

// sideChurn is one side's churn ceiling: hardened `true` containers
// through the Docker API when the sides are Docker runtimes; when they are
// backends, sandboxes made, made ready and removed through each backend,
// which every backend can do alike.
func sideChurn(ctx context.Context, b sandbox.Backend, reg *languages.Registry, o Options) (float64, error) {
	if db, ok := b.(*docker.Backend); ok && o.Varying != VaryingBackend {
		return churnCeiling(ctx, db, reg, o.ChurnFor, o.ChurnLoops)
	}
	l, err := shellLanguage(reg)
	if err != nil {
		return 0, err
	}
	t := engine.New(config.Default(), reg, b, nil).Template(l)
	return parallelRate(o.ChurnFor, o.ChurnLoops, func() error {
		sb, err := b.Create(ctx, t)
		if err != nil {
			return err
		}
		defer sb.Close()
		return sb.Ready(ctx)
	})
}

// plural is the plural of a noun phrase ending in a regular noun.
func plural(s string) string {
	if rest, ok := strings.CutSuffix(s, "y"); ok {
		return rest + "ies"
	}
	return s + "s"
}
