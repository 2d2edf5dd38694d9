package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
)

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`

func TestHTTPGuards(t *testing.T) {
	server := mcpserver.New(offlineEngine(t), "test", nil)
	h := mcpserver.HTTPHandler(server, mcpserver.HTTPOptions{
		MaxBodyBytes:   1 << 10,
		AllowedOrigins: []string{"https://app.example"},
		BearerToken:    "s3cret",
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
	server := mcpserver.New(offlineEngine(t), "test", nil)
	ts := httptest.NewServer(mcpserver.HTTPHandler(server, mcpserver.HTTPOptions{MaxBodyBytes: 1 << 20}))
	defer ts.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "http-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: ts.URL, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tools.Tools) != 6 {
		t.Fatalf("tools %v, %v", tools, err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "nope", "code": "x"}})
	if err != nil || !res.IsError {
		t.Fatalf("want a tool error, got %v %v", res, err)
	}
}
