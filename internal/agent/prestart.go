package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// prestartTimeout bounds how long a job waits for the prestart command to say
// it has started.
const prestartTimeout = 2 * time.Second

// prestarted is closed when the prestart command has closed its standard
// output (or ended): its sign that it has made what the compile command looks
// for, so a job that arrives at once does not start a second compiler beside
// it. Nil when there is no prestart.
var prestarted chan struct{}

// waitPrestart waits, boundedly, for the prestart command to say it started.
func waitPrestart() {
	if prestarted == nil {
		return
	}
	select {
	case <-prestarted:
	case <-time.After(prestartTimeout):
	}
}

// StartPrestart starts the prestart command described by spec (JSON; empty
// means none) in the working directory, with the stages' environment, its
// input empty and its stderr discarded, in its own process group. The
// command closes its standard output once it is under way; the first job
// waits for that. The agent reaps it. It is not stopped here: the end of the
// first stage kills what is left of it, as it kills anything a stage leaves
// behind.
func StartPrestart(spec string) error {
	if spec == "" {
		return nil
	}
	var p wire.Prestart
	if err := json.Unmarshal([]byte(spec), &p); err != nil || len(p.Argv) == 0 {
		return fmt.Errorf("%s is not a prestart command (JSON with a non-empty argv): %q", wire.PrestartEnv, spec)
	}
	dir, err := os.Getwd()
	if err != nil {
		return fmt.Errorf("prestart: finding the working directory: %w", err)
	}
	cmd := exec.Command(p.Argv[0], p.Argv[1:]...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), p.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return fmt.Errorf("prestart: %w", err)
	}
	if err := startTracked(cmd); err != nil {
		return fmt.Errorf("starting prestart %q: %w", p.Argv[0], err)
	}
	started := make(chan struct{})
	prestarted = started
	go func() {
		_, _ = io.Copy(io.Discard, out)
		close(started)
		_ = cmd.Wait()
		untrack(cmd)
	}()
	return nil
}
