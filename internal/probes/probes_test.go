package probes

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
)

func TestReadiness(t *testing.T) {
	reachable := func(context.Context) error { return nil }
	down := func(context.Context) error {
		return errors.New("dial unix /var/run/docker.sock: connect: no such file")
	}
	tests := []struct {
		name       string
		check      func(context.Context) error
		store      func(context.Context) error
		stats      []pool.Stat
		wantStatus int
		wantBody   string
	}{
		{"ready without pools when the backend answers", reachable, nil, nil, 200, "ready"},
		{"ready with an idle sandbox in every pool", reachable, nil, []pool.Stat{{Language: "python", Size: 2, Idle: 1}}, 200, "ready"},
		{"ready while a pool fills without errors", reachable, nil, []pool.Stat{{Language: "python", Size: 2, Creating: 2}}, 200, "ready"},
		{"ready while an idle sandbox remains despite a failing refill", reachable, nil, []pool.Stat{{Language: "python", Size: 2, Idle: 1, Error: "boom"}}, 200, "ready"},
		{"not ready when the backend is unreachable", down, nil, []pool.Stat{{Language: "python", Size: 2, Idle: 2}}, 503, "not ready: the sandbox backend is unreachable: dial unix"},
		{"not ready when the state store does not answer", reachable, func(context.Context) error {
			return errors.New("store: unavailable: context deadline exceeded")
		}, nil, 503, "not ready: the state store does not answer: store: unavailable"},
		{"ready when the state store answers", reachable, reachable, nil, 200, "ready"},
		{"not ready when a pool is empty and failing", reachable, nil, []pool.Stat{
			{Language: "bash", Size: 2, Idle: 2},
			{Language: "python", Size: 2, Error: "runtime image missing"},
		}, 503, "not ready: the python pool has no idle sandbox and cannot create one: runtime image missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Readiness(Checks{Backend: tt.check, Store: tt.store, Pools: func() []pool.Stat { return tt.stats }}).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/readyz", nil))
			if rec.Code != tt.wantStatus || !strings.HasPrefix(rec.Body.String(), tt.wantBody) {
				t.Fatalf("got %d %q, want %d %q...", rec.Code, rec.Body.String(), tt.wantStatus, tt.wantBody)
			}
		})
	}
}

func TestLivenessAnswersWithoutChecks(t *testing.T) {
	rec := httptest.NewRecorder()
	Liveness().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if rec.Code != 200 || rec.Body.String() != "ok\n" {
		t.Fatalf("got %d %q", rec.Code, rec.Body.String())
	}
}
