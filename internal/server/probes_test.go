package server

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
			s := &Server{cfg: config.Config{Metrics: tt.metrics}}
			if tt.metrics.Enabled() {
				s.metrics = metrics.New(metrics.Options{})
			}
			mux := http.NewServeMux()
			s.metricsRoute(mux, deny)
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if rec.Code != tt.wantStatus || !strings.Contains(rec.Body.String(), tt.wantBody) {
				t.Fatalf("got %d %q, want %d with %q", rec.Code, rec.Body.String(), tt.wantStatus, tt.wantBody)
			}
		})
	}
}
