package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// CodeMode registers the metrics of the tool calls runs' programs make
// through the server (code mode) and returns what counts each: by server,
// tool and status (ok, tool_error, refused, timeout, failed), its duration
// and its result's bytes. The tools are the operator's servers', so the
// labels stay few.
func (m *Metrics) CodeMode() func(server, tool, status string, d time.Duration, resultBytes int) {
	calls := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "code_mode_calls_total",
		Help: "Tool calls runs' programs made through the server (code mode), by MCP server, tool and status."}, []string{"server", "tool", "status"})
	seconds := prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: Namespace, Name: "code_mode_call_seconds",
		Help: "Duration of the tool calls made through the server, by MCP server.", Buckets: latencyBuckets}, []string{"server"})
	bytes := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "code_mode_result_bytes_total",
		Help: "Bytes of the tool results that entered sandboxes, by MCP server."}, []string{"server"})
	m.reg.MustRegister(calls, seconds, bytes)
	return func(server, tool, status string, d time.Duration, resultBytes int) {
		calls.WithLabelValues(server, tool, status).Inc()
		seconds.WithLabelValues(server).Observe(d.Seconds())
		bytes.WithLabelValues(server).Add(float64(resultBytes))
	}
}
