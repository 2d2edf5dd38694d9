// Package metrics exposes the server's Prometheus metrics: runs, their
// latencies, the warm pool, sandbox churn, output volume, live sessions and
// executions, and rejected requests. Each server owns its registry (never
// the global one), so tests run servers side by side.
package metrics

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// Namespace prefixes every metric name.
const Namespace = "mcr"

// OtherPrincipal is the principal label of every principal past the cap.
const OtherPrincipal = "other"

// Rejection reasons, the values of the reason label of
// mcr_rejected_requests_total.
const (
	ReasonAuth      = "auth"      // HTTP 401: no or a bad credential
	ReasonRate      = "rate"      // HTTP 429: over the per-client rate
	ReasonForbidden = "forbidden" // HTTP 403: Host or Origin not allowed
	ReasonQuota     = "quota"     // a per-principal quota is used up
	ReasonBusy      = "busy"      // no run slot, sandbox or session free in time
)

// Options configure Metrics.
type Options struct {
	// MaxPrincipals caps the distinct values of the principal label: the
	// first this many principals seen get their own, the rest share
	// "other". 0 means 20.
	MaxPrincipals int
}

// Metrics holds the server's collectors and their registry.
type Metrics struct {
	reg *prometheus.Registry

	runs          *prometheus.CounterVec
	queueWait     *prometheus.HistogramVec
	acquire       *prometheus.HistogramVec
	exec          *prometheus.HistogramVec
	total         *prometheus.HistogramVec
	outputBytes   *prometheus.CounterVec
	sandboxCreate *prometheus.HistogramVec
	sandboxRemove prometheus.Histogram
	createErrors  prometheus.Counter
	rejected      *prometheus.CounterVec
	toolCalls     *prometheus.CounterVec
	egressConns   *prometheus.CounterVec
	egressBytes   *prometheus.CounterVec

	principalsMu  sync.Mutex
	principals    map[string]bool
	maxPrincipals int
}

// Latency buckets from 5 ms to a minute: warm runs take tens of
// milliseconds, cold ones hundreds, long jobs many seconds.
var latencyBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New returns metrics registered in a registry of their own, with the Go
// runtime and process collectors.
func New(opts Options) *Metrics {
	if opts.MaxPrincipals <= 0 {
		opts.MaxPrincipals = 20
	}
	reg := prometheus.NewRegistry()
	m := &Metrics{reg: reg, principals: map[string]bool{}, maxPrincipals: opts.MaxPrincipals}
	hist := func(name, help string, labels ...string) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: name, Help: help, Buckets: latencyBuckets}, labels)
	}
	m.runs = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "runs_total",
		Help: "Runs finished, by language, status (ok, error, compile_error, timeout, oom_killed, killed, or the error code of a run that could not run: busy, invalid_argument, ...) and principal."},
		[]string{"language", "status", "principal"})
	m.queueWait = hist("run_queue_wait_seconds", "Time a run waited for a run slot.", "language")
	m.acquire = hist("run_sandbox_acquire_seconds", "Time a run waited for its sandbox: taken from the warm pool (warm=true) or created (warm=false).", "language", "warm")
	m.exec = hist("run_exec_seconds", "Time a run's job spent in its sandbox.", "language")
	m.total = hist("run_duration_seconds", "Whole time of a run, from request to result.", "language")
	m.outputBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "run_output_bytes_total",
		Help: "Bytes programs wrote, by language and stream (stdout, stderr)."}, []string{"language", "stream"})
	m.sandboxCreate = hist("sandbox_create_seconds", "Time to create and start a sandbox, by purpose (a language, or session).", "purpose")
	m.sandboxRemove = prometheus.NewHistogram(prometheus.HistogramOpts{Namespace: Namespace, Name: "sandbox_remove_seconds",
		Help: "Time to remove a sandbox.", Buckets: latencyBuckets})
	m.createErrors = prometheus.NewCounter(prometheus.CounterOpts{Namespace: Namespace, Name: "sandbox_create_errors_total",
		Help: "Sandbox creations that failed."})
	m.rejected = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "rejected_requests_total",
		Help: "Requests refused, by reason: auth (401), rate (429), forbidden (403, Host or Origin), quota, busy."}, []string{"reason"})
	m.toolCalls = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tool_calls_total",
		Help: "Tool calls, by tool and outcome (ok, or the error code)."}, []string{"tool", "outcome"})
	m.egressConns = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "egress_connections_total",
		Help: "Connections sandboxes made through their egress proxies, by principal and decision (allowed, denied)."}, []string{"principal", "decision"})
	m.egressBytes = prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "egress_bytes_total",
		Help: "Bytes through the egress proxies, both ways, by principal."}, []string{"principal"})
	for _, r := range []string{ReasonAuth, ReasonRate, ReasonForbidden, ReasonQuota, ReasonBusy} {
		m.rejected.WithLabelValues(r) // present at 0, so rate() works from the first scrape
	}
	reg.MustRegister(m.runs, m.queueWait, m.acquire, m.exec, m.total, m.outputBytes,
		m.sandboxCreate, m.sandboxRemove, m.createErrors, m.rejected, m.toolCalls, m.egressConns, m.egressBytes,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Registry returns the registry, for tests and extra collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg, ErrorHandling: promhttp.ContinueOnError})
}

// principalLabel bounds the principal label: the first MaxPrincipals names
// seen keep theirs, later ones are "other".
func (m *Metrics) principalLabel(name string) string {
	m.principalsMu.Lock()
	defer m.principalsMu.Unlock()
	if m.principals[name] {
		return name
	}
	if len(m.principals) >= m.maxPrincipals {
		return OtherPrincipal
	}
	m.principals[name] = true
	return name
}

// Egress counts one connection a sandbox of owner made through its egress
// proxy, and its bytes.
func (m *Metrics) Egress(owner string, allowed bool, bytes int64) {
	label := m.principalLabel(owner)
	decision := "denied"
	if allowed {
		decision = "allowed"
	}
	m.egressConns.WithLabelValues(label, decision).Inc()
	m.egressBytes.WithLabelValues(label).Add(float64(bytes))
}

// RunDone records a finished run ([engine.Observer]).
func (m *Metrics) RunDone(ctx context.Context, r engine.RunStats) {
	lang := r.Language
	if lang == "" {
		lang = "unknown" // refused before its language was known
	}
	m.runs.WithLabelValues(lang, r.Status, m.principalLabel(principal.FromContext(ctx).Name)).Inc()
	if r.Reached&engine.StageQueued != 0 {
		m.queueWait.WithLabelValues(lang).Observe(r.QueueWait.Seconds())
	}
	if r.Reached&engine.StageAcquired != 0 {
		m.acquire.WithLabelValues(lang, boolLabel(r.Warm)).Observe(r.Acquire.Seconds())
	}
	if r.Reached&engine.StageExecuted != 0 {
		m.exec.WithLabelValues(lang).Observe(r.Exec.Seconds())
		m.total.WithLabelValues(lang).Observe(r.Total.Seconds())
		m.outputBytes.WithLabelValues(lang, "stdout").Add(float64(r.StdoutBytes))
		m.outputBytes.WithLabelValues(lang, "stderr").Add(float64(r.StderrBytes))
	}
}

// ToolCall counts a tool call by tool and outcome, and a refused one by
// reason (busy, quota).
func (m *Metrics) ToolCall(tool, errorCode string) {
	outcome := errorCode
	if outcome == "" {
		outcome = "ok"
	}
	m.toolCalls.WithLabelValues(tool, outcome).Inc()
	switch errorCode {
	case engine.CodeBusy:
		m.Reject(ReasonBusy)
	case ReasonQuota:
		m.Reject(ReasonQuota)
	}
}

// Reject counts a refused request.
func (m *Metrics) Reject(reason string) { m.rejected.WithLabelValues(reason).Inc() }

// SandboxCreated records a sandbox creation's time, or its failure.
func (m *Metrics) SandboxCreated(purpose string, d time.Duration, err error) {
	if err != nil {
		m.createErrors.Inc()
		return
	}
	m.sandboxCreate.WithLabelValues(purpose).Observe(d.Seconds())
}

// SandboxRemoved records a sandbox removal's time.
func (m *Metrics) SandboxRemoved(d time.Duration) { m.sandboxRemove.Observe(d.Seconds()) }

// Gauge registers a gauge read at each scrape.
func (m *Metrics) Gauge(name, help string, read func() float64) {
	m.reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: Namespace, Name: name, Help: help}, read))
}

// WatchPool registers the warm pool's state, read from stats at each
// scrape.
func (m *Metrics) WatchPool(stats func() []pool.Stat) {
	m.reg.MustRegister(&poolCollector{stats: stats})
}

func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}
