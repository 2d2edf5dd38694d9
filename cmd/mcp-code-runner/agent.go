package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
)

func init() { subcommands = append(subcommands, newAgentCmd) }

// newAgentCmd is the process that runs first inside every sandbox; it is not
// meant to be run by hand.
func newAgentCmd(*globalOptions) *cobra.Command {
	return &cobra.Command{
		Use:    "agent",
		Short:  "Run inside a sandbox: read one framed request on stdin, stream results on stdout",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if os.Getenv("MCR_SANDBOX") != "1" {
				return fmt.Errorf("the agent runs only inside a sandbox that mcp-code-runner created")
			}
			agent.KillStragglers = os.Getuid() != 0
			agent.BecomeInit()
			// Either failing leaves the job to run as in a cold sandbox.
			if err := agent.StartPrestart(os.Getenv(agent.PrestartEnv)); err != nil {
				fmt.Fprintln(os.Stderr, "agent:", err)
			}
			if err := agent.StartWarm(os.Getenv(agent.WarmEnv)); err != nil {
				fmt.Fprintln(os.Stderr, "agent:", err)
			}
			if err := agent.Serve(os.Stdin, os.Stdout); err != nil {
				fmt.Fprintln(os.Stderr, "agent:", err)
				os.Exit(2)
			}
			return nil
		},
	}
}
