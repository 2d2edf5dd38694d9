package main

import (
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

func init() { subcommands = append(subcommands, newServeCmd) }

func newServeCmd(g *globalOptions) *cobra.Command {
	var (
		httpAddr  string
		authToken string
		auditPath string
	)
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve MCP over stdio (default) or Streamable HTTP",
		Long: `Serve runs the MCP server. By default it speaks MCP over stdin/stdout, as
MCP clients that launch it expect (logs go to stderr). With --http it
serves Streamable HTTP at /mcp on the given address, in stateless mode so
that clients of both protocol eras (2025-11-25 and 2026-07-28) work.

A non-loopback --http address needs --auth-token (or MCR_AUTH_TOKEN):
every request must then carry "Authorization: Bearer <token>".

Operations: /healthz (liveness) and /readyz (readiness) are served without
authentication; --metrics-addr serves Prometheus metrics on a listener of
their own (--metrics-on-http-listener=true also on the MCP listener, behind
its authentication, for operator tokens only); --audit-log appends one JSON line per tool call that
runs code or touches a session's files; --log-format json for JSON logs.

Several clients each get their own token, as NAME=TOKEN entries of
--http-auth-tokens (or http.auth_tokens): each token's sessions, executions
and outputs are its own. --http-operators names the tokens that may list
and cancel everyone's work; quotas (--quotas-*) bound each token's share.`,
		Example: `  mcp-code-runner serve
  mcp-code-runner serve --http 127.0.0.1:8080
  mcp-code-runner serve --http 127.0.0.1:8080 --metrics-addr 127.0.0.1:9464 --audit-log audit.log --log-format json
  mcp-code-runner serve --http 0.0.0.0:8080 --http-auth-tokens "alice=$ALICE_TOKEN,bob=$BOB_TOKEN,ops=$OPS_TOKEN" --http-operators ops --quotas-concurrent-runs 4`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, err := newServingStack(g, httpAddr == "")
			if err != nil {
				return err
			}
			defer st.Close()
			if authToken == "" {
				authToken = os.Getenv("MCR_AUTH_TOKEN")
			}
			// Tokens are checked before anything starts: a bad entry stops
			// the server at once.
			tokens, err := httpTokens(st.cfg.HTTP, authToken)
			if err != nil && httpAddr != "" {
				return err
			}
			if !cmd.Flags().Changed("audit-log") {
				auditPath = st.cfg.Audit.Path
			}
			auditLog, err := openAudit(auditPath, httpAddr == "")
			if err != nil {
				return err
			}
			if auditLog != nil {
				defer auditLog.Close()
			}
			srv := server.New(st.parts(), server.Options{HTTPAddr: httpAddr, Tokens: tokens, Audit: auditLog, Version: version})
			if err := srv.Start(cmd.Context()); err != nil {
				srv.Shutdown()
				return err
			}
			err = srv.Wait()
			srv.Shutdown()
			return err
		},
	}
	cmd.Flags().StringVar(&httpAddr, "http", "", "serve Streamable HTTP on this address (e.g. 127.0.0.1:8080) instead of stdio")
	cmd.Flags().StringVar(&authToken, "auth-token", "", "require this bearer token on HTTP requests (env MCR_AUTH_TOKEN)")
	cmd.Flags().StringVar(&auditPath, "audit-log", "", `append the audit log (one JSON line per tool call that runs code or touches a session's files) to this file, or "-" for stdout with --http (setting audit.path)`)
	g.addSettingFlags(cmd)
	return cmd
}

// httpTokens returns the configured bearer tokens and --auth-token's.
func httpTokens(h config.HTTP, authToken string) ([]config.Token, error) {
	if authToken != "" {
		h.AuthTokens = append(h.AuthTokens, authToken)
	}
	tokens, err := h.Tokens()
	if err != nil && authToken != "" {
		err = fmt.Errorf("%w (--auth-token and MCR_AUTH_TOKEN count as one more entry)", err)
	}
	return tokens, err
}

// replicaName names this server in the records of the executions and
// sessions it runs. On the embedded store it is the same at every start
// ("local"): one server per data directory, so the next one ends what the
// last left running. Replicas sharing etcd each need their own, unique
// even where host name and process id are not: two pods on the host's
// network share the node's name and, each in its own PID namespace, both
// run as PID 1. So the name ends with random bytes, taken once per process.
func replicaName(cfg config.Config) string {
	if cfg.Store.Backend != config.StoreEtcd {
		return "local"
	}
	host, _ := os.Hostname()
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), strings.ToLower(rand.Text()[:8]))
}

// openAudit opens the audit log the configuration names, if any. Standard
// output carries MCP messages on stdio, so "-" is refused there.
func openAudit(path string, stdio bool) (*audit.Log, error) {
	switch {
	case path == "":
		return nil, nil
	case path == "-" && stdio:
		return nil, errors.New(`--audit-log - (standard output) cannot be used when serving MCP on stdio: stdout carries the MCP messages; give a file path, or serve with --http`)
	}
	return audit.Open(path)
}
