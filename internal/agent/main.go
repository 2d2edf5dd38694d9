package agent

import (
	"encoding/json"
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
	warmUp("/workspace")
	return Serve(os.Stdin, os.Stdout)
}

// warmUp runs, before the job arrives, the code paths its first
// milliseconds take: decoding a request and encoding results (the JSON
// package builds its per-type codecs on first use); and it opens what every
// run uses, the workspace and the cgroup's OOM counter, and keeps them open.
// Done at boot, that cost is off the run's latency (about 0.35 ms of a 5 ms
// bash hello world for the codecs).
func warmUp(workdir string) {
	var req Request
	_ = json.Unmarshal([]byte(`{"op":"run","workdir":"/workspace","output_limit":1,"files":[{"path":"main.sh","data":"ZWNobyBoaQo="}],`+
		`"stages":[{"name":"run","argv":["bash","main.sh"],"env":["A=b"],"stdin":"eA==","timeout_ms":1}]}`), &req)
	_, _ = json.Marshal(StageResult{Name: "run"})
	_, _ = json.Marshal(Done{})
	if r, err := os.OpenRoot(workdir); err == nil {
		bootWorkspace.dir, bootWorkspace.root = workdir, r
	}
	oomFile()
}
