package transport

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

func TestOperatorsOnlyEndpointRefusesClientTokens(t *testing.T) {
	t.Parallel()
	secret := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "every principal's series") })
	withTokens := HTTPOptions{Tokens: []config.Token{{Name: "alice", Value: "alice-s3cret"}, {Name: "ops", Value: "ops-s3cret", Operator: true}}}
	cases := []struct {
		name       string
		opts       HTTPOptions
		token      string
		wantStatus int
		wantBody   string
	}{
		{"an operator token reads it", withTokens, "ops-s3cret", http.StatusOK, "every principal's series"},
		{"a client token gets 403 naming the operator role", withTokens, "alice-s3cret", http.StatusForbidden, "only a token with the operator role"},
		{"no token gets 401", withTokens, "", http.StatusUnauthorized, ""},
		{"an unknown token gets 401", withTokens, "guess", http.StatusUnauthorized, ""},
		{"a listener without authentication serves its one user", HTTPOptions{}, "", http.StatusOK, "every principal's series"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			req := httptest.NewRequest(http.MethodGet, "http://127.0.0.1:8080/metrics", nil)
			if c.token != "" {
				req.Header.Set("Authorization", "Bearer "+c.token)
			}
			rec := httptest.NewRecorder()
			ProtectForOperators(secret, c.opts).ServeHTTP(rec, req)
			if rec.Code != c.wantStatus || !strings.Contains(rec.Body.String(), c.wantBody) {
				t.Fatalf("got %d %q, want %d with %q", rec.Code, rec.Body.String(), c.wantStatus, c.wantBody)
			}
		})
	}
}
