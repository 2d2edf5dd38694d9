package server

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

// postInitialize sends n initialize requests from each of clients parallel
// callers with token (none when empty) and counts the answers by status; a
// 429 without Retry-After fails the test.
func postInitialize(t *testing.T, h http.Handler, token string, clients, n int) map[int]int {
	t.Helper()
	const body = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	var mu sync.Mutex
	codes := map[int]int{}
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for range n {
				req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
				req.Host = "127.0.0.1:8080"
				req.RemoteAddr = "127.0.0.1:40000"
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				if token != "" {
					req.Header.Set("Authorization", "Bearer "+token)
				}
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code == http.StatusTooManyRequests && rec.Header().Get("Retry-After") == "" {
					t.Error("a 429 without Retry-After")
				}
				mu.Lock()
				codes[rec.Code]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return codes
}

func TestLoopbackWithoutTokensServesOneUsersParallelCallsWithoutRateLimit(t *testing.T) {
	server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	h := transport.HTTPHandler(server, httpOptions(config.Default().HTTP, "127.0.0.1", nil))
	// 8 callers of 40 requests each: over the default's burst of 100.
	codes := postInitialize(t, h, "", 8, 40)
	if codes[http.StatusOK] != 8*40 {
		t.Errorf("answers by status: %v, want all 200", codes)
	}
}

func TestListenersWithTokensKeepTheDefaultRateLimit(t *testing.T) {
	for _, host := range []string{"127.0.0.1", "0.0.0.0"} {
		t.Run(host, func(t *testing.T) {
			tokens := []config.Token{{Name: "alice", Value: "secret-token"}}
			opts := httpOptions(config.Default().HTTP, host, tokens)
			if opts.RatePerMinute != config.Default().HTTP.RatePerMinute {
				t.Fatalf("rate per minute %d, want the default %d", opts.RatePerMinute, config.Default().HTTP.RatePerMinute)
			}
			server := mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			codes := postInitialize(t, transport.HTTPHandler(server, opts), "secret-token", 8, 40)
			if codes[http.StatusTooManyRequests] == 0 {
				t.Errorf("answers by status: %v, want some 429 beyond the burst", codes)
			}
		})
	}
}

func TestServersWithReusePortShareOnePortAndOthersAreRefusedIt(t *testing.T) {
	var shared net.ListenConfig
	shared.Control = reusePort
	first, err := shared.Listen(t.Context(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := shared.Listen(t.Context(), "tcp", first.Addr().String())
	if err != nil {
		t.Fatalf("a second listener with SO_REUSEPORT on %s: %v", first.Addr(), err)
	}
	second.Close()
	if plain, err := net.Listen("tcp", first.Addr().String()); err == nil {
		plain.Close()
		t.Errorf("a listener without SO_REUSEPORT bound %s, which another holds", first.Addr())
	}
}
