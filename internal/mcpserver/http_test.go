package mcpserver_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestHTTPGuards(t *testing.T) {
	t.Parallel()
	server := mcpserver.New(offlineEngine(t), "test", nil)
	h := transport.HTTPHandler(server, transport.HTTPOptions{
		MaxBodyBytes:   1 << 10,
		AllowedOrigins: []string{"https://app.example"},
		AllowedHosts:   []string{"mcp-code-runner.mcp-code-runner.svc"},
		BearerTokens:   []string{"s3cret"},
	})
	cases := []struct {
		name   string
		host   string
		header map[string]string
		body   string
		want   int
	}{
		{"ok", "127.0.0.1:8080", map[string]string{"Authorization": "Bearer s3cret"}, initBody, http.StatusOK},
		{"no token", "127.0.0.1:8080", nil, initBody, http.StatusUnauthorized},
		{"wrong token", "127.0.0.1:8080", map[string]string{"Authorization": "Bearer nope"}, initBody, http.StatusUnauthorized},
		{"foreign Host (DNS rebinding)", "evil.example", map[string]string{"Authorization": "Bearer s3cret"}, initBody, http.StatusForbidden},
		{"allowed Host through a loopback hop (kubectl port-forward, a sidecar proxy)", "mcp-code-runner.mcp-code-runner.svc:8080",
			map[string]string{"Authorization": "Bearer s3cret"}, initBody, http.StatusOK},
		{"foreign Origin", "localhost:8080", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}, initBody, http.StatusForbidden},
		{"loopback Origin", "localhost:8080", map[string]string{"Authorization": "Bearer s3cret", "Origin": "http://localhost:3000"}, initBody, http.StatusOK},
		{"allowed Origin", "localhost:8080", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://app.example"}, initBody, http.StatusOK},
		{"body over the cap", "127.0.0.1:8080", map[string]string{"Authorization": "Bearer s3cret"}, `{"x":"` + strings.Repeat("a", 2048) + `"}`, http.StatusRequestEntityTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(c.body))
			req.Host = c.host
			req.RemoteAddr = "127.0.0.1:5555"
			// Every request arrives on a loopback address, as on a server
			// that listens on localhost or behind a loopback hop.
			req = req.WithContext(context.WithValue(req.Context(), http.LocalAddrContextKey, &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			for k, v := range c.header {
				req.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != c.want {
				t.Errorf("status %d, want %d: %s", rec.Code, c.want, rec.Body.String())
			}
		})
	}
}

// TestHTTPWithSDKClient drives the real handler over loopback with the SDK's
// Streamable HTTP client.
func TestHTTPWithSDKClient(t *testing.T) {
	t.Parallel()
	server := mcpserver.New(offlineEngine(t), "test", nil)
	ts := httptest.NewServer(transport.HTTPHandler(server, transport.HTTPOptions{MaxBodyBytes: 1 << 20}))
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 15 {
		t.Fatalf("tools %v, %v", tools, err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "nope", "code": "x"}})
	if err != nil || !res.IsError {
		t.Fatalf("want a tool error, got %v %v", res, err)
	}
}

func TestOAuthResourceServer(t *testing.T) {
	t.Parallel()
	// A stand-in authorization server's introspection endpoint, on loopback.
	intro := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		user, pass, _ := r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case user != "mcr" || pass != "pw":
			http.Error(w, "bad client", http.StatusUnauthorized)
		case r.Form.Get("token") == "good":
			fmt.Fprintf(w, `{"active":true,"sub":"alice","scope":"run","iss":"https://issuer.example","exp":%d}`, time.Now().Add(time.Hour).Unix())
		case r.Form.Get("token") == "noscope":
			fmt.Fprintf(w, `{"active":true,"sub":"bob","scope":"read","exp":%d}`, time.Now().Add(time.Hour).Unix())
		default:
			fmt.Fprint(w, `{"active":false}`)
		}
	}))
	defer intro.Close()
	server := mcpserver.New(offlineEngine(t), "test", nil)
	h := transport.HTTPHandler(server, transport.HTTPOptions{
		MaxBodyBytes: 1 << 20,
		OAuth: transport.OAuthOptions{
			Issuer: "https://issuer.example", IntrospectionURL: intro.URL, ClientID: "mcr", ClientSecret: "pw",
			ResourceURL: "http://127.0.0.1:8080/mcp", Scopes: []string{"run"},
		},
	})
	do := func(method, path, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(initBody))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	meta := do(http.MethodGet, transport.MetadataPath+"/mcp", "")
	if meta.Code != http.StatusOK || !strings.Contains(meta.Body.String(), `"authorization_servers":["https://issuer.example"]`) ||
		!strings.Contains(meta.Body.String(), `"resource":"http://127.0.0.1:8080/mcp"`) {
		t.Fatalf("metadata: %d %s", meta.Code, meta.Body.String())
	}
	noToken := do(http.MethodPost, "/mcp", "")
	if noToken.Code != http.StatusUnauthorized || !strings.Contains(noToken.Header().Get("WWW-Authenticate"), `resource_metadata="http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"`) {
		t.Errorf("no token: %d, WWW-Authenticate %q", noToken.Code, noToken.Header().Get("WWW-Authenticate"))
	}
	if rec := do(http.MethodPost, "/mcp", "revoked"); rec.Code != http.StatusUnauthorized {
		t.Errorf("inactive token: %d", rec.Code)
	}
	if rec := do(http.MethodPost, "/mcp", "noscope"); rec.Code != http.StatusForbidden {
		t.Errorf("token without the scope: %d", rec.Code)
	}
	if rec := do(http.MethodPost, "/mcp", "good"); rec.Code != http.StatusOK {
		t.Errorf("good token: %d %s", rec.Code, rec.Body.String())
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	server := mcpserver.New(offlineEngine(t), "test", nil)
	h := transport.HTTPHandler(server, transport.HTTPOptions{MaxBodyBytes: 1 << 20, RatePerMinute: 60, BearerTokens: []string{"a", "b"}})
	post := func(token string) int {
		req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(initBody))
		req.Host = "127.0.0.1:8080"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
			t.Error("429 without Retry-After")
		}
		return rec.Code
	}
	limited := 0
	for range 30 {
		if post("a") == http.StatusTooManyRequests {
			limited++
		}
	}
	if limited < 15 {
		t.Errorf("only %d of 30 rapid requests were limited at 60/min (burst 10)", limited)
	}
	if code := post("b"); code != http.StatusOK {
		t.Errorf("another client was limited too: %d", code)
	}
}
