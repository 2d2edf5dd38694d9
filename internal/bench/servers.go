package bench

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// ServersOptions are the settings of Servers.
type ServersOptions struct {
	// URLs are the MCP endpoints of the running servers, e.g.
	// http://127.0.0.1:8080/mcp; each is one column.
	URLs []string
	// Languages are measured one after another.
	Languages []string
	// Runs is how many timed run_code calls each server gets per language.
	Runs int
	// Warmup is how many untimed calls each server gets first per
	// language (its pool filled, its code paths hot).
	Warmup int
	// Think is the pause before every call, as a model's turn between
	// tool calls: an idle machine in between, which is what a warm run
	// meets in use (and lets the pool refill).
	Think time.Duration
	// Token, if set, is sent as a bearer token (servers with auth).
	Token string
	Out   io.Writer
}

// Servers times run_code of each language's hello world against servers
// that are already running (two builds, or two configurations) side by
// side: the calls take turns, server after server, with Think before each,
// so that both meet the same machine at the same time; it prints each
// server's median, tail and failures per language.
func Servers(ctx context.Context, reg *languages.Registry, o ServersOptions) error {
	if len(o.URLs) == 0 {
		return fmt.Errorf("bench --servers: no server URL given (want URL,URL,... of running servers' MCP endpoints)")
	}
	clients := make([]*rawClient, len(o.URLs))
	for i, u := range o.URLs {
		clients[i] = newRawClient(u)
		clients[i].token = o.Token
	}
	fmt.Fprintf(o.Out, "### run_code through MCP against running servers (%d runs each, %s think time, %d warm-up)\n\n", o.Runs, o.Think, o.Warmup)
	fmt.Fprintln(o.Out, "| language | server | p50 ms | p90 ms | p99 ms | max ms | failed |")
	fmt.Fprintln(o.Out, "|---|---|---|---|---|---|---|")
	for _, name := range o.Languages {
		l, ok := reg.Lookup(name)
		if !ok {
			return fmt.Errorf("bench --servers: unknown language %q", name)
		}
		samples := make([]*Sample, len(clients))
		calls := make([]func() bool, len(clients))
		for i, c := range clients {
			samples[i] = &Sample{Name: o.URLs[i]}
			calls[i] = rawRunCall(ctx, c, l.Name, l.Example)
			for range o.Warmup {
				if !calls[i]() {
					return fmt.Errorf("bench --servers: a warm-up run of %s on %s failed (is the server up, and does it serve %s?)", l.Name, o.URLs[i], l.Name)
				}
			}
		}
		pause := func() {
			select {
			case <-time.After(o.Think):
			case <-ctx.Done():
			}
		}
		for r := range o.Runs {
			// The order turns each round, so that no server always follows
			// the same one.
			for k := range clients {
				i := (r + k) % len(clients)
				samples[i].time(pause, calls[i])
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		for i, s := range samples {
			fmt.Fprintf(o.Out, "| %s | %s | %s | %s | %s | %s | %d |\n", l.Name, o.URLs[i],
				ms(s.Quantile(0.5)), ms(s.Quantile(0.9)), ms(s.Quantile(0.99)), ms(s.Quantile(1)), s.Errs)
		}
	}
	return nil
}
