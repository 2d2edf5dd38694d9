//go:build !linux

package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

func init() { subcommands = append(subcommands, newAgentCmd) }

// newAgentCmd stands in for the sandbox agent on hosts that are not Linux:
// sandboxes are Linux containers, so they run the agent built for Linux
// (cmd/mcp-code-runner-agent), never this binary.
func newAgentCmd(*globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "agent",
		Short:  "Run inside a sandbox (Linux builds only)",
		Hidden: true,
		RunE: func(*cobra.Command, []string) error {
			return fmt.Errorf("this binary is built for %s/%s; the sandbox agent runs only in Linux containers: %s", runtime.GOOS, runtime.GOARCH, linuxAgentHint)
		},
	}
}
