// Command fixtureserver serves the conformance suite's fixtures
// (internal/conformance) over Streamable HTTP at /mcp through the product's
// own HTTP handler (transport.HTTPHandler: the same Host and Origin guards,
// body cap, cancellation routing, stateless mode for both protocol eras), or
// over stdio through the product's stdio transport. It is a test tool run by
// scripts/conformance.sh, never part of the product:
//
//	go build -o bin/conformance-fixture ./internal/conformance/fixtureserver
//	bin/conformance-fixture --http 127.0.0.1:8090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/conformance"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

func main() {
	addr := flag.String("http", "", "serve Streamable HTTP at /mcp on this loopback address (e.g. 127.0.0.1:8090) instead of stdio")
	flag.Parse()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, *addr, log)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "conformance fixture server:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string, log *slog.Logger) error {
	server := conformance.NewServer("test", log)
	if addr == "" {
		err := server.Run(ctx, transport.NewStdio())
		if errors.Is(err, context.Canceled) {
			return nil
		}
		return err
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil || !transport.IsLoopback(host) {
		return fmt.Errorf("--http %q: want a loopback HOST:PORT, like 127.0.0.1:8090 (the fixture server has no authentication)", addr)
	}
	// The product's defaults, except the rate limit: the suite sends
	// hundreds of requests in seconds from one address.
	defaults := config.Default().HTTP
	mux := http.NewServeMux()
	mux.Handle("/mcp", transport.HTTPHandler(server, transport.HTTPOptions{MaxBodyBytes: defaults.MaxBodyBytes}))
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	log.Info("serving the conformance fixtures over Streamable HTTP", "url", "http://"+ln.Addr().String()+"/mcp")
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(sctx)
}
