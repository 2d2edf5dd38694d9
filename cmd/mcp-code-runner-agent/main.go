// Command mcp-code-runner-agent is the first process inside every sandbox:
// it reads framed requests on stdin and streams framed results on stdout.
// It is the `agent` subcommand of mcp-code-runner built alone: a small
// static binary whose start costs a sandbox little CPU and memory.
//
// `mcp-code-runner-agent install DEST` copies the binary itself to DEST: on
// Kubernetes an init container runs it from the agent image (which holds
// nothing else, so no cp) to put the agent into a volume the sandbox's
// container shares, without changing the runtime images.
//
// Run by the name tar (a link the crun backend puts on CRIU's PATH), it
// is the tar CRIU saves and restores a sandbox's tmpfs mounts with
// (internal/criutar).
package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
	"github.com/mcp-code-runner/mcp-code-runner/internal/criutar"
)

func main() {
	if filepath.Base(os.Args[0]) == criutar.Name {
		os.Exit(criutar.Main(os.Args[1:]))
	}
	if len(os.Args) == 3 && os.Args[1] == "install" {
		if err := install(os.Args[2]); err != nil {
			fmt.Fprintln(os.Stderr, "agent install:", err)
			os.Exit(2)
		}
		return
	}
	if err := agent.Main(); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
		os.Exit(2)
	}
}
