package main

import (
	"debug/elf"
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

// elfArch returns the Go architecture of the Linux executable at path:
// "amd64", "arm64" and so on, or the ELF machine's name for others.
func elfArch(path string) (string, error) {
	f, err := elf.Open(path)
	if err != nil {
		return "", fmt.Errorf("agent binary %s is not a Linux executable (%w): %s", path, err, linuxAgentHint)
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64", nil
	case elf.EM_AARCH64:
		return "arm64", nil
	case elf.EM_386:
		return "386", nil
	case elf.EM_ARM:
		return "arm", nil
	case elf.EM_RISCV:
		return "riscv64", nil
	case elf.EM_S390:
		return "s390x", nil
	case elf.EM_PPC64:
		return "ppc64le", nil
	}
	return f.Machine.String(), nil
}

// checkAgentArch says what to do when the agent at path cannot run on a
// daemon of architecture daemonArch (as Docker names it: amd64, arm64).
func checkAgentArch(path, daemonArch string) error {
	arch, err := elfArch(path)
	if err != nil {
		return err
	}
	if arch != daemonArch {
		return fmt.Errorf("agent binary %s is built for linux/%s, but the daemon runs linux/%s containers: rebuild it with GOOS=linux GOARCH=%s CGO_ENABLED=0 (%s)", path, arch, daemonArch, daemonArch, linuxAgentHint)
	}
	return nil
}
