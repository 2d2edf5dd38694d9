package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/etcdlocal"
)

// stateStore is one state store under measurement.
type stateStore struct {
	name string
	st   store.Store
}

// openStateStores opens the stores a server can keep its state in: in
// memory (the reference: no durability), the embedded file store and etcd
// (one the bench starts on loopback when an etcd binary is at hand). The
// returned function closes them all; note says why etcd is missing.
func openStateStores(dir string) (stores []stateStore, closeAll func(), note string, err error) {
	var closers []func()
	closeAll = func() {
		for _, closer := range slices.Backward(closers) {
			closer()
		}
	}
	stores = append(stores, stateStore{"memory", store.NewMemory()})
	emb, err := store.OpenEmbedded(filepath.Join(dir, "embedded"), store.EmbeddedOptions{})
	if err != nil {
		return nil, closeAll, "", fmt.Errorf("opening the embedded store: %w", err)
	}
	closers = append(closers, func() { _ = emb.Close() })
	stores = append(stores, stateStore{"embedded (bbolt, fsync per write)", emb})
	bin, err := etcdlocal.Binary()
	if err != nil {
		return stores, closeAll, err.Error(), nil
	}
	srv, err := etcdlocal.Start(bin, dir, etcdlocal.Options{})
	if err != nil {
		return stores, closeAll, "etcd did not start: " + err.Error(), nil
	}
	closers = append(closers, srv.Stop)
	et, err := store.OpenEtcd(config.Etcd{Endpoints: []string{srv.Endpoint}, Prefix: "bench/"})
	if err != nil {
		return stores, closeAll, "etcd did not open: " + err.Error(), nil
	}
	closers = append(closers, func() { _ = et.Close() })
	stores = append(stores, stateStore{"etcd (one member, loopback)", et})
	return stores, closeAll, "", nil
}

// statePaths are the calls of the state store table, for one store.
type statePaths struct {
	runCode, execution, keepOutput *series
}

// stateSection measures what the state store adds to a warm run: run_code
// (which writes the store only for an output beyond the inline cap), an
// execution (a record written before start_execution answers and its final
// state before get_execution's wait ends), and the write of a 100 KiB output
// itself, on each store in turn, run by run, so that the machine's drift
// affects them alike.
func stateSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, o Options, report *Report) error {
	l, ok := reg.Lookup(o.LoadLanguage)
	if !ok {
		return fmt.Errorf("unknown language %q", o.LoadLanguage)
	}
	dir, err := os.MkdirTemp("", "mcp-code-runner-bench-state-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stores, closeAll, note, err := openStateStores(dir)
	defer closeAll()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\n## State store: what it adds to a warm %s run (ms), %d runs per path and store\n\n", l.Name, o.StoreRuns)
	if note != "" {
		fmt.Fprintf(w, "etcd not measured: %s\n\n", note)
	}
	scfg := cfg
	scfg.Pool.Size, scfg.Pool.Sizes = 0, []string{fmt.Sprintf("%s=%d", l.Name, max(1, o.PoolSize))}
	scfg.Pool.MaxSize, scfg.Pool.MaxSizes = 0, nil
	output := make([]byte, 100<<10)
	var all []*series
	for _, s := range stores {
		srv, stop, err := startServer(ctx, server.Parts{Config: scfg, Registry: reg, Backend: b, Store: s.st, Replica: "bench-" + s.name,
			EngineOptions: []engine.Option{replicas.SharedQuota(s.st, nil)}})
		if err != nil {
			return err
		}
		defer stop()
		eng := srv.Engine()
		cs, err := connect(ctx, srv.URL())
		if err != nil {
			return err
		}
		defer cs.Close()
		quiet := func() { waitQuiet(eng, l.Name, quietSettle) }
		kept := outputs.New(s.st, "bench-outputs", 64<<20, 0, time.Hour)
		n := 0
		paths := statePaths{
			runCode:   &series{s.name + ": warm run_code (no store write)", quiet, codeCall(ctx, cs, "run_code", l.Name, l.Example)},
			execution: &series{s.name + ": warm start_execution + get_execution (record, final state)", quiet, executionCall(ctx, cs, l.Name, l.Example)},
			keepOutput: &series{s.name + ": keeping a 100 KiB output (an output beyond the inline cap)", nil, func() bool {
				n++
				return kept.Put(fmt.Sprintf("mcr://bench/%d/stdout", n), "bench", output) == nil
			}},
		}
		all = append(all, paths.runCode, paths.execution, paths.keepOutput)
		waitIdle(eng, l.Name, max(1, o.PoolSize), time.Minute)
	}
	samples := interleave(o.StoreRuns, all...)
	fmt.Fprintln(w, "| store: path | p50 | p95 | p99 | p50 added to memory's |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	const perStore = 3
	for i, s := range samples {
		ref := samples[i%perStore]
		added := float64((s.Quantile(.5) - ref.Quantile(.5)).Microseconds()) / 1000
		fmt.Fprintf(w, "| %s | %s | %s | %s | %+.2f |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), added)
		report.Rows = append(report.Rows, rowOf(l.Name, s))
	}
	if o.ReplicaLoadFor > 0 && len(stores) == perStore {
		return replicaLoad(ctx, w, scfg, reg, b, o, stores[perStore-1].st, report)
	}
	if o.ReplicaLoadFor > 0 {
		fmt.Fprintln(w, "\nReplicas not measured: they share an etcd store, and there is none here.")
	}
	return nil
}

// replicaLoad runs the sustained load against one server, then against two
// replicas sharing st (clients alternate between them), on the same
// backend and machine: the cost of sharing the state, not a gain in
// capacity, since both replicas use the same CPUs.
func replicaLoad(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, o Options, st store.Store, report *Report) error {
	l, _ := reg.Lookup(o.LoadLanguage)
	var urls []string
	for _, replica := range []string{"a", "b"} {
		srv, stop, err := startServer(ctx, server.Parts{Config: cfg, Registry: reg, Backend: b, Store: st, Replica: "bench-replica-" + replica,
			EngineOptions: []engine.Option{replicas.SharedQuota(st, nil)}})
		if err != nil {
			return err
		}
		defer stop()
		eng := srv.Engine()
		urls = append(urls, srv.URL())
		waitIdle(eng, l.Name, max(1, o.PoolSize), time.Minute)
	}
	fmt.Fprintf(w, "\n## Replicas on one etcd store: %d clients, %s, %s through MCP HTTP, same machine\n\n", o.LoadClients, o.ReplicaLoadFor, l.Name)
	fmt.Fprintln(w, "| servers | runs | runs/s | p50 | p95 | p99 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|")
	var rates []float64
	for _, n := range []int{1, 2} {
		next := 0
		session := func() (*mcp.ClientSession, error) {
			url := urls[next%n]
			next++
			return connect(ctx, url)
		}
		s := loadSampleOf(ctx, session, l.Name, l.Example, o.LoadClients, o.ReplicaLoadFor)
		s.Name = fmt.Sprintf("sustained load, %d MCP clients, %d replica(s) on etcd", o.LoadClients, n)
		fmt.Fprintf(w, "| %d | %d | %.2f | %s | %s | %s | %d |\n", n, len(s.Times), s.Rate(), ms(s.Quantile(.5)), ms(s.Quantile(.95)), ms(s.Quantile(.99)), s.Errs)
		report.Rows = append(report.Rows, rowOf(l.Name, s))
		rates = append(rates, s.Rate())
	}
	if rates[0] > 0 {
		fmt.Fprintf(w, "| **2 / 1 runs/s** | | %.2fx | | | | |\n", rates[1]/rates[0])
	}
	return nil
}

// codeCall calls tool with lang and code and reports an ok run.
func codeCall(ctx context.Context, cs *mcp.ClientSession, tool, lang, code string) func() bool {
	return func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"language": lang, "code": code}})
		return err == nil && !res.IsError && okStatus(res)
	}
}

// executionCall starts an execution of code and waits for its end with
// get_execution.
func executionCall(ctx context.Context, cs *mcp.ClientSession, lang, code string) func() bool {
	return func() bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "start_execution", Arguments: map[string]any{"language": lang, "code": code}})
		if err != nil || res.IsError {
			return false
		}
		started, _ := res.StructuredContent.(map[string]any)
		id, _ := started["execution_id"].(string)
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "get_execution", Arguments: map[string]any{"execution_id": id, "wait_seconds": 60}})
		if err != nil || res.IsError {
			return false
		}
		got, _ := res.StructuredContent.(map[string]any)
		status, _ := got["status"].(string)
		return strings.EqualFold(status, string(executions.StatusFinished))
	}
}
