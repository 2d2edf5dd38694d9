package agent

import (
	"errors"
	"fmt"
	"os"
)

// SandboxEnv marks the environment of a sandbox the server created; the
// agent refuses to run without it, so nobody starts it on a host by mistake
// (it would kill the user's processes after each stage).
const SandboxEnv = "MCR_SANDBOX"

// Main is the agent process: it becomes the sandbox's init, starts what the
// sandbox's template asks for ahead of the job, then serves requests on
// stdin until it ends. Both the standalone agent binary and the server
// binary's hidden `agent` subcommand call it.
func Main() error {
	if os.Getenv(SandboxEnv) != "1" {
		return errors.New("the agent runs only inside a sandbox that mcp-code-runner created")
	}
	KillStragglers = os.Getuid() != 0
	BecomeInit()
	// Either failing leaves the job to run as in a cold sandbox.
	if err := StartPrestart(os.Getenv(PrestartEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	if err := StartWarm(os.Getenv(WarmEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	return Serve(os.Stdin, os.Stdout)
}
