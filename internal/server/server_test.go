package server

import (
	"context"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// freeAddr is a loopback address no listener holds now.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestAServerStartsServesAndShutsDown: a server on the in-process backend
// starts, is ready, runs a program through MCP over HTTP, ends its serving
// when its context does, and shuts down leaving no sandbox (the fake
// backend checks that at the test's end).
func TestAServerStartsServesAndShutsDown(t *testing.T) {
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	backend := testutil.FakeBackend(t)
	addr := freeAddr(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	srv := New(Parts{Config: cfg, Registry: languages.Builtin(), Backend: backend, BackendChoice: "fake"},
		Options{HTTPAddr: addr, Version: "test"})
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, "the server to be ready")

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting: %v", err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "bash", "code": "echo served"}})
	if err != nil || res.IsError {
		t.Fatalf("run_code: %v %+v", err, res)
	}
	if out, _ := res.StructuredContent.(map[string]any)["stdout"].(string); !strings.Contains(out, "served") {
		t.Errorf("run_code's stdout is %q, want served", out)
	}
	cs.Close()

	cancel()
	waited := make(chan error, 1)
	go func() { waited <- srv.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Errorf("wait: %v, want nil after a shutdown", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("serving did not end within 30 s of its context")
	}
	srv.Shutdown()
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		_ = resp.Body.Close()
		t.Error("the listener still answers after the shutdown")
	}
}
