package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// lastRun keeps the engine's stats of the last run it finished and the
// time the last tool call's handler took (the engine's run and the
// result's encoding, without the SDK and HTTP around it).
type lastRun struct {
	mu      sync.Mutex
	r       engine.RunStats
	handler time.Duration
}

func (o *lastRun) RunDone(_ context.Context, r engine.RunStats) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.r = r
}

// ToolCall is the server's tool-call observer (server.Parts.OnToolCall).
func (o *lastRun) ToolCall(_ context.Context, c mcpserver.ToolCall) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.handler = c.Duration
}

func (o *lastRun) get() (engine.RunStats, time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.r, o.handler
}

// timingBackend times the last sandbox creation (create, attach, start)
// and removal.
type timingBackend struct {
	sandbox.Backend
	mu       sync.Mutex
	create   time.Duration
	remove   time.Duration
	removed  chan struct{} // closed by the next removal
	watching bool
}

func (b *timingBackend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	start := time.Now()
	sb, err := b.Backend.Create(ctx, t)
	b.mu.Lock()
	b.create = time.Since(start)
	b.mu.Unlock()
	if err != nil {
		return nil, err
	}
	return &timedRemoval{Sandbox: sb, b: b}, nil
}

// expectRemoval arms the wait for the next removal.
func (b *timingBackend) expectRemoval() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.removed, b.watching = make(chan struct{}), true
	return b.removed
}

type timedRemoval struct {
	sandbox.Sandbox
	b    *timingBackend
	once sync.Once
}

func (s *timedRemoval) Close() {
	s.once.Do(func() {
		start := time.Now()
		s.Sandbox.Close()
		d := time.Since(start)
		s.b.mu.Lock()
		defer s.b.mu.Unlock()
		s.b.remove = d
		if s.b.watching {
			close(s.b.removed)
			s.b.watching = false
		}
	})
}

// breakdownRow is where one run's time went, in ms.
type breakdownRow struct {
	Path       string  `json:"path"`
	Client     float64 `json:"client_ms"`
	MCP        float64 `json:"mcp_ms"`
	Encode     float64 `json:"result_encoding_ms"`
	Queue      float64 `json:"queue_ms"`
	Take       float64 `json:"sandbox_take_ms"`
	Create     float64 `json:"create_start_ms,omitempty"`
	Exchange   float64 `json:"agent_exchange_ms"`
	Program    float64 `json:"program_ms"`
	Shape      float64 `json:"result_ms"`
	Remove     float64 `json:"remove_ms,omitempty"`
	Cold       bool    `json:"cold"`
	ProgramErr string  `json:"-"`
}

func msf(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// breakdownOf runs lang's hello world once over cs and says where its time
// went: the client's round trip less the tool handler's time is MCP (HTTP
// on both sides, the client's and the SDK's JSON-RPC, the arguments'
// decoding and check against the input schema, the principal's lookup);
// the handler's time less the engine's total is the tool result's
// encoding (its JSON, once, as structured content and text); the engine's
// stats give
// the run slot, the sandbox's take and the exchange with the agent, less
// the program's own time as the agent measured it; what is left of the
// engine's total is the result's shaping. For a cold run, tb gives the
// sandbox's creation and its removal after the answer.
func breakdownOf(ctx context.Context, cs *mcp.ClientSession, lang, path string, obs *lastRun, tb *timingBackend) (breakdownRow, error) {
	var removed <-chan struct{}
	if tb != nil {
		removed = tb.expectRemoval()
	}
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": lang, "code": hello[lang]}})
	client := time.Since(start)
	if err != nil {
		return breakdownRow{}, err
	}
	if res.IsError || !okStatus(res) {
		return breakdownRow{}, fmt.Errorf("the %s run failed", path)
	}
	var out struct {
		DurationMs int64 `json:"duration_ms"`
	}
	data, _ := json.Marshal(res.StructuredContent)
	_ = json.Unmarshal(data, &out)
	st, handler := obs.get()
	program := time.Duration(out.DurationMs) * time.Millisecond
	row := breakdownRow{Path: path, Client: msf(client), MCP: msf(client - handler), Encode: msf(handler - st.Total), Queue: msf(st.QueueWait), Take: msf(st.Acquire),
		Exchange: msf(st.Exec - program), Program: msf(program), Shape: msf(st.Total - st.QueueWait - st.Acquire - st.Exec)}
	if tb != nil {
		select {
		case <-removed:
		case <-time.After(time.Minute):
		}
		tb.mu.Lock()
		row.Create, row.Remove, row.Cold = msf(tb.create), msf(tb.remove), true
		tb.mu.Unlock()
	}
	return row, nil
}

func printBreakdown(w io.Writer, lang string, rows []breakdownRow) {
	fmt.Fprintf(w, "\n## Where the time goes: one warm and one cold %s hello world through MCP HTTP (ms)\n\n", lang)
	fmt.Fprintln(w, "| run | client round trip | MCP (HTTP, JSON-RPC, arguments, auth) | tool result's encoding | run slot | sandbox take | of which create+start | agent exchange | program | result | remove (after the answer) |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|---|")
	for _, r := range rows {
		create, remove := "-", "-"
		if r.Cold {
			create, remove = fmt.Sprintf("%.1f", r.Create), fmt.Sprintf("%.1f", r.Remove)
		}
		fmt.Fprintf(w, "| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %s | %.1f | %.1f | %.1f | %s |\n", r.Path, r.Client, r.MCP, r.Encode, r.Queue, r.Take, create, r.Exchange, r.Program, r.Shape, remove)
	}
	fmt.Fprintln(w, "\n(The program's time is the agent's wall clock of the run stage, in whole milliseconds; the exchange is the job's time in the sandbox less it. The result is the engine's shaping of it; a hello world's outputs fit inline, so the state store is not written.)")
}

// Row is one latency row of a bench run, as --json writes it.
type Row struct {
	Language string  `json:"language"`
	Path     string  `json:"path"`
	P50      float64 `json:"p50_ms"`
	P95      float64 `json:"p95_ms"`
	P99      float64 `json:"p99_ms"`
	Rate     float64 `json:"runs_per_second,omitempty"`
}

// Report is what --json writes and --compare reads.
type Report struct {
	Time      string         `json:"time"`
	Rows      []Row          `json:"rows"`
	Breakdown []breakdownRow `json:"breakdown,omitempty"`
}

func rowOf(lang string, s *Sample) Row {
	return Row{Language: lang, Path: s.Name, P50: msf(s.Quantile(.5)), P95: msf(s.Quantile(.95)), P99: msf(s.Quantile(.99)), Rate: s.Rate()}
}

// loadReport reads a report that bench --json wrote.
func loadReport(path string) (*Report, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the reference run for --compare: %w", err)
	}
	var ref Report
	if err := json.Unmarshal(data, &ref); err != nil || len(ref.Rows) == 0 {
		return nil, fmt.Errorf("--compare %s: not a report of bench --json (%v); write one with `mcp-code-runner bench --json FILE`", path, err)
	}
	return &ref, nil
}

// compare prints this run's rows against those of the same language and
// path in ref (read from refPath): the ratio now / then of p50 and p99.
func compare(w io.Writer, now, ref Report, refPath string) {
	then := map[[2]string]Row{}
	for _, r := range ref.Rows {
		then[[2]string{r.Language, r.Path}] = r
	}
	fmt.Fprintf(w, "\n## Compared with %s (%s): now / then, below 1 is faster now\n\n", refPath, ref.Time)
	fmt.Fprintln(w, "| language | path | p50 now | p50 then | p50 ratio | p99 now | p99 then | p99 ratio |")
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|")
	ratio := func(a, b float64) string {
		if b <= 0 {
			return "-"
		}
		return fmt.Sprintf("%.2fx", a/b)
	}
	matched := 0
	for _, r := range now.Rows {
		t, ok := then[[2]string{r.Language, r.Path}]
		if !ok {
			continue
		}
		matched++
		fmt.Fprintf(w, "| %s | %s | %.1f | %.1f | %s | %.1f | %.1f | %s |\n", r.Language, r.Path, r.P50, t.P50, ratio(r.P50, t.P50), r.P99, t.P99, ratio(r.P99, t.P99))
	}
	if matched == 0 {
		fmt.Fprintln(w, "(no row of this run matches one of the reference: measure the same languages)")
	}
}
