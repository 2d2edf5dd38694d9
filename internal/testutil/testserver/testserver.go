// Package testserver starts whole servers (internal/server, as serve runs
// one) for tests, each on a loopback port of its own and shut down at the
// test's end, removing the sandboxes it made and no other server's.
package testserver

import (
	"context"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// Start starts a server of parts (the built-in registry when it names
// none) with opts (on 127.0.0.1, a free port, when they name no address)
// and returns it; its URL is its MCP endpoint. The test's end stops its
// serving and shuts it down.
func Start(t testing.TB, parts server.Parts, opts server.Options) *server.Server {
	t.Helper()
	if parts.Registry == nil {
		parts.Registry = languages.Builtin()
	}
	if opts.HTTPAddr == "" {
		opts.HTTPAddr = "127.0.0.1:0"
	}
	if opts.Version == "" {
		opts.Version = "test"
	}
	ctx, cancel := context.WithCancel(context.Background())
	srv := server.New(parts, opts)
	if err := srv.Start(ctx); err != nil {
		cancel()
		srv.Shutdown()
		t.Fatalf("starting the server: %v", err)
	}
	t.Cleanup(func() {
		cancel()
		if err := srv.Wait(); err != nil {
			t.Errorf("the server stopped serving with %v", err)
		}
		srv.Shutdown()
	})
	return srv
}

// Docker starts a server of cfg on the real Docker backend (testutil.Backend)
// with the built-in registry and the runtime versions of the local images,
// as Start does; at the test's end, after its shutdown, no container of
// this process may remain (testutil.NoLeftovers).
func Docker(t testing.TB, cfg config.Config, opts server.Options) (*server.Server, *docker.Backend) {
	t.Helper()
	b := testutil.Backend(t)
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) }) // after the shutdown Start registers
	reg := languages.Builtin()
	return Start(t, server.Parts{Config: cfg, Registry: reg, Backend: b,
		EngineOptions: []engine.Option{engine.WithRuntimeVersions(images.NewLocalVersions(b.Client(), reg))}}, opts), b
}
