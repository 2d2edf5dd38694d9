package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newHealthcheckCmd) }

// newHealthcheckCmd asks a server's /readyz (or /healthz) and exits 0 when
// it answers 200: a probe for images without curl (the server's image is
// FROM scratch), like a Kubernetes exec probe or a Compose healthcheck.
func newHealthcheckCmd(*globalOptions) *cobra.Command {
	var socket, url string
	var live bool
	cmd := &cobra.Command{
		Use:   "healthcheck",
		Short: "Exit 0 when a server is ready (or, with --live, alive)",
		Long: `healthcheck asks a running server's /readyz (the sandbox backend and the
state store answer) or, with --live, its /healthz, on its health socket
(http.health_socket, env MCR_HTTP_HEALTH_SOCKET) or at a URL, and exits 0
when it answers 200, 1 otherwise with the answer on stderr.`,
		Example: `  mcp-code-runner healthcheck --socket /tmp/mcr-health.sock
  mcp-code-runner healthcheck --url http://127.0.0.1:9464 --live`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if socket == "" && url == "" {
				socket = os.Getenv("MCR_HTTP_HEALTH_SOCKET")
			}
			if (socket == "") == (url == "") {
				return errors.New("healthcheck: give --socket PATH (the server's http.health_socket) or --url http://HOST:PORT, one of them")
			}
			path := "/readyz"
			if live {
				path = "/healthz"
			}
			client := &http.Client{Timeout: 5 * time.Second}
			target := strings.TrimSuffix(url, "/") + path
			if socket != "" {
				target = "http://health" + path
				client.Transport = &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
					return (&net.Dialer{}).DialContext(ctx, "unix", socket)
				}}
			}
			resp, err := client.Get(target)
			if err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "healthcheck: %v\n", err)
				return exitCodeError(1)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			if resp.StatusCode != http.StatusOK {
				fmt.Fprintf(cmd.ErrOrStderr(), "healthcheck: %s: %s\n", resp.Status, strings.TrimSpace(string(body)))
				return exitCodeError(1)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&socket, "socket", "", "the server's health socket (http.health_socket; default env MCR_HTTP_HEALTH_SOCKET)")
	cmd.Flags().StringVar(&url, "url", "", "a listener that serves /readyz and /healthz, like the metrics listener's http://127.0.0.1:9464")
	cmd.Flags().BoolVar(&live, "live", false, "ask /healthz (the process answers) instead of /readyz (it can run code)")
	return cmd
}
