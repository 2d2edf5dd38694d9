package main

import (
	"fmt"
	"runtime"
)

// linuxAgentHint says how to get the agent a sandbox runs where this binary
// cannot be it: sandboxes are Linux containers, and on macOS or Windows this
// binary is a Mach-O or PE executable.
const linuxAgentHint = "build the agent for Linux on the daemon's architecture, in a checkout of the source: " +
	"`GOOS=linux GOARCH=$(docker version -f '{{.Server.Arch}}') CGO_ENABLED=0 go build -o mcp-code-runner-agent ./cmd/mcp-code-runner-agent`, " +
	"then set agent_path in the configuration file (or MCR_AGENT_PATH, or --agent-path) to that file"

// hostAgentError is nil where this binary (or the agent beside it) can be
// the sandbox agent, that is on Linux, and otherwise says why not and what
// to do instead.
func hostAgentError(goos, goarch string) error {
	if goos == "linux" {
		return nil
	}
	return fmt.Errorf("no agent_path is set, and this binary (%s/%s) cannot run in a Linux sandbox: %s", goos, goarch, linuxAgentHint)
}

// hostAgentUsable reports hostAgentError for the running binary.
func hostAgentUsable() error { return hostAgentError(runtime.GOOS, runtime.GOARCH) }
