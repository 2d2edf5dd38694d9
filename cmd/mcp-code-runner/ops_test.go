package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/metrics"
)

func TestMetricsRoute(t *testing.T) {
	deny := func(http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { http.Error(w, "Unauthorized", http.StatusUnauthorized) })
	}
	tests := []struct {
		name       string
		metrics    config.Metrics
		wantStatus int
		wantBody   string
	}{
		{"off: a scrape gets 404 saying how to turn metrics on", config.Metrics{}, 404, "metrics are not served on this listener: set metrics.addr"},
		{"on a separate listener only: 404 here, pointing there", config.Metrics{Addr: "127.0.0.1:9464"}, 404, "metrics are served on their own listener, at http://127.0.0.1:9464/metrics"},
		{"on the MCP listener: behind its authentication", config.Metrics{OnHTTPListener: true}, 401, "Unauthorized"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := &stack{cfg: config.Config{Metrics: tt.metrics}}
			if tt.metrics.Enabled() {
				st.metrics = metrics.New(metrics.Options{})
			}
			mux := http.NewServeMux()
			metricsRoute(mux, st, deny)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("got %d %q, want %d with %q", rec.Code, rec.Body.String(), tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestOpenAudit(t *testing.T) {
	if l, err := openAudit("", true); l != nil || err != nil {
		t.Fatalf("no path: %v %v, want no log", l, err)
	}
	if _, err := openAudit("-", true); err == nil || !strings.Contains(err.Error(), "stdout carries the MCP messages") {
		t.Fatalf(`"-" on stdio: %v, want a refusal`, err)
	}
	if l, err := openAudit("-", false); l == nil || err != nil {
		t.Fatalf(`"-" with --http: %v %v, want stdout`, l, err)
	}
}

func TestReplicaNameIsLocalOnTheEmbeddedStoreAndUniquePerProcessOnEtcd(t *testing.T) {
	if got := replicaName(config.Config{}); got != "local" {
		t.Errorf("embedded store: replica %q, want local", got)
	}
	etcd := config.Config{Store: config.Store{Backend: config.StoreEtcd}}
	// Two processes on one host network, each PID 1 in its own namespace,
	// differ only in the random ending.
	a, b := replicaName(etcd), replicaName(etcd)
	if a == b {
		t.Errorf("two replicas of one host and PID share the name %q", a)
	}
}
