package bench

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

// startServer starts a server of parts, as serve runs one, listening on a
// loopback port of its own, and returns it with the function that shuts
// it down (removing the sandboxes it made and no other server's). What
// the operator's configuration adds beside serving MCP is left out, so
// that several servers share the process and measure the same thing:
// background image builds, the metrics listener, the health socket, code
// mode's servers and an advertised URL.
func startServer(ctx context.Context, parts server.Parts) (*server.Server, func(), error) {
	c := &parts.Config
	c.Images.BuildOnStart = false
	c.Metrics.Addr, c.Metrics.OnHTTPListener = "", false
	c.HTTP.HealthSocket, c.HTTP.ReusePort = "", false
	c.CodeMode.Servers = nil
	c.Store.AdvertiseURL = ""
	ctx, cancel := context.WithCancel(ctx)
	srv := server.New(parts, server.Options{HTTPAddr: "127.0.0.1:0", Version: "bench"})
	if err := srv.Start(ctx); err != nil {
		cancel()
		srv.Shutdown()
		return nil, nil, fmt.Errorf("starting a server: %w", err)
	}
	return srv, func() {
		cancel()
		_ = srv.Wait()
		srv.Shutdown()
	}, nil
}

// startSessionServer starts a server of cfg on b whose sessions bench
// measures in-process (through Sessions): without a warm pool, whose
// sandboxes would count in the sessions' memory, its state in memory.
func startSessionServer(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend) (*server.Server, func(), error) {
	cfg.Pool.Size, cfg.Pool.Sizes = 0, nil
	return startServer(ctx, server.Parts{Config: cfg, Registry: reg, Backend: b})
}

// connect connects a new MCP client to the server at url.
func connect(ctx context.Context, url string) (*mcp.ClientSession, error) {
	c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting the MCP client: %w", err)
	}
	return cs, nil
}
