// Command mcp-code-runner-agent is the first process inside every sandbox:
// it reads framed requests on stdin and streams framed results on stdout.
// It is the `agent` subcommand of mcp-code-runner built alone: a small
// static binary whose start costs a sandbox little CPU and memory.
package main

import (
	"fmt"
	"os"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
)

func main() {
	if err := agent.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	}
}
