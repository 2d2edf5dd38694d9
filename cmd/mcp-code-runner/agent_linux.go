package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
)

func init() { subcommands = append(subcommands, newAgentCmd) }

// newAgentCmd is the process that runs first inside every sandbox when no
// standalone agent binary (cmd/mcp-code-runner-agent) sits beside this one;
// it is not meant to be run by hand.
func newAgentCmd(*globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "agent",
		Short:  "Run inside a sandbox: read one framed request on stdin, stream results on stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(_ *cobra.Command, _ []string) error {
			if err := agent.Main(); err != nil {
				fmt.Fprintln(os.Stderr, "agent:", err)
				os.Exit(2)
			}
			return nil
		},
	}
}
