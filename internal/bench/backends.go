package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

// Backend is one side of a side-by-side comparison: a sandbox backend, and
// the configuration its engines run with.
type Backend struct {
	Name    string // as printed: "docker", "kubernetes", "pool.release_grace_ms=30"
	Sandbox sandbox.Backend
	// Config, if set, is this side's configuration instead of the
	// comparison's (sides that share a backend and differ in a setting).
	Config *config.Config
}

// CompareOptions choose what CompareBackends measures.
type CompareOptions struct {
	Languages []string
	Runs      int // warm runs per language and backend
	ColdRuns  int // cold runs per language and backend
	PoolSize  int // warm sandboxes per language and backend
	Out       io.Writer
}

// CompareBackends measures run_code through MCP Streamable HTTP on each
// backend, cold (no pool: the sandbox is made for the run) and warm (from a
// full pool), in one run. The backends take turns run by run, so that the
// machine's drift affects them alike and their ratios hold within the run.
func CompareBackends(ctx context.Context, cfg config.Config, reg *languages.Registry, backends []Backend, o CompareOptions) error {
	w := o.Out
	sideNames := make([]string, 0, len(backends))
	for _, b := range backends {
		sideNames = append(sideNames, b.Name)
	}
	fmt.Fprintf(w, "mcp-code-runner bench, side by side (%s): %s, %d CPUs seen by Go, pool %d per language\n\n", strings.Join(sideNames, ", "), time.Now().UTC().Format(time.RFC3339), numCPU(), o.PoolSize)

	sides := make([]*backendSide, 0, len(backends))
	defer func() {
		for _, s := range sides {
			for _, v := range slices.Backward(s.closeLater) {
				v()
			}
		}
	}()
	names := make([]string, 0, len(o.Languages))
	for _, lang := range o.Languages {
		l, ok := reg.Lookup(lang)
		if !ok {
			return fmt.Errorf("unknown language %q", lang)
		}
		names = append(names, l.Name)
		if _, ok := hello[l.Name]; !ok {
			hello[l.Name] = l.Example
		}
	}
	for _, b := range backends {
		s := &backendSide{Backend: b}
		sides = append(sides, s) // closed by the deferred function, even half made
		if err := s.start(ctx, cfg, reg, names, o); err != nil {
			return err
		}
	}

	fmt.Fprintf(w, "## run_code through MCP HTTP per backend (ms), %d warm and %d cold runs per language\n\n", o.Runs, o.ColdRuns)
	fmt.Fprintln(w, "| language | side | path | p50 | p95 | p99 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	for _, lang := range names {
		for _, s := range sides {
			if err := waitPoolFull(ctx, s.warm, lang, o.PoolSize, 5*time.Minute); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		}
		// Every side's pool is full and quiet before a warm run, not only
		// its own: what one side does after its run (removing, refilling)
		// would otherwise land in the next side's.
		allQuiet := func() {
			for _, s := range sides {
				if waitPoolFull(ctx, s.warm, lang, o.PoolSize, time.Minute) != nil {
					return
				}
			}
			time.Sleep(quietSettle)
		}
		var warmTurns, coldTurns []*series
		for _, s := range sides {
			warmTurns = append(warmTurns, &series{
				name:   "warm sandbox from a full pool",
				before: allQuiet,
				call:   mcpCall(ctx, s.hot, lang),
			})
			coldTurns = append(coldTurns, &series{
				name: "cold sandbox (made for the run, removed after)",
				call: mcpCall(ctx, s.cold, lang),
			})
		}
		warm := interleave(o.Runs, warmTurns...)
		cold := interleave(o.ColdRuns, coldTurns...)
		for _, rows := range [][]*Sample{cold, warm} {
			for i, s := range rows {
				fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %d |\n", lang, sides[i].Name, s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), s.Errs)
			}
		}
		printBackendRatios(w, lang, sides, cold, warm)
	}
	return nil
}

// printBackendRatios prints each side's p50 and p99 against the first's,
// cold and warm.
func printBackendRatios(w io.Writer, lang string, sides []*backendSide, cold, warm []*Sample) {
	for i := 1; i < len(sides); i++ {
		for _, r := range []struct {
			path string
			rows []*Sample
		}{{"cold", cold}, {"warm", warm}} {
			base, this := r.rows[0], r.rows[i]
			if base.Quantile(.5) > 0 && base.Quantile(.99) > 0 {
				fmt.Fprintf(w, "| %s | **%s / %s, %s** | p50 %.1fx, p99 %.1fx | | | | |\n", lang, sides[i].Name, sides[0].Name, r.path,
					float64(this.Quantile(.5))/float64(base.Quantile(.5)), float64(this.Quantile(.99))/float64(base.Quantile(.99)))
			}
		}
	}
}

// backendSide is one backend of CompareBackends: a warm pool and the cold
// path on it, each behind its own server's MCP HTTP with a client.
type backendSide struct {
	Backend
	warm       *engine.Engine
	cold, hot  *mcp.ClientSession
	closeLater []func()
}

// start starts the side's servers, one with a warm pool of names and one
// with the cold path, and a client of each; closeLater stops them.
func (s *backendSide) start(ctx context.Context, cfg config.Config, reg *languages.Registry, names []string, o CompareOptions) error {
	sideCfg := cfg
	if s.Config != nil {
		sideCfg = *s.Config
	}

	coldCfg := sideCfg
	coldCfg.Pool.Size, coldCfg.Pool.Sizes = 0, nil

	warmCfg := sideCfg
	warmCfg.Pool.Size, warmCfg.Pool.Sizes = 0, nil
	for _, name := range names {
		warmCfg.Pool.Sizes = append(warmCfg.Pool.Sizes, fmt.Sprintf("%s=%d", name, o.PoolSize))
	}
	for _, side := range []struct {
		cfg    config.Config
		into   **mcp.ClientSession
		engine **engine.Engine // the warm one's, which the tables wait on
	}{{coldCfg, &s.cold, nil}, {warmCfg, &s.hot, &s.warm}} {
		srv, stop, err := startServer(ctx, server.Parts{Config: side.cfg, Registry: reg, Backend: s.Sandbox})
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		s.closeLater = append(s.closeLater, stop)
		if side.engine != nil {
			*side.engine = srv.Engine()
		}
		cs, err := connect(ctx, srv.URL())
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		s.closeLater = append(s.closeLater, func() { _ = cs.Close() })
		*side.into = cs
	}
	return nil
}

// waitPoolFull waits until lang's pool holds n idle sandboxes with none
// being made or removed: a warm run then measures its own cost, not the
// refill after the run before.
func waitPoolFull(ctx context.Context, e *engine.Engine, lang string, n int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		for _, s := range e.PoolStats() {
			if s.Language == lang && s.Idle >= n && s.Creating == 0 && s.Removing == 0 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the %s pool did not fill to %d sandboxes within %s (%v): are its sandboxes pending? Each one asks for --cpus cores; lower it or --bench-pool-size", lang, n, limit, context.Cause(ctx))
		case <-tick.C:
		}
	}
}
