package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
	"golang.org/x/sys/unix"
)

// Main is the agent process: it becomes the sandbox's init, starts what the
// sandbox's template asks for ahead of the job, then serves requests on
// stdin until it ends. Both the standalone agent binary and the server
// binary's hidden `agent` subcommand call it.
func Main() error {
	if os.Getenv(wire.SandboxEnv) != "1" {
		return errors.New("the agent runs only inside a sandbox that mcp-code-runner created")
	}
	KillStragglers = os.Getuid() != 0
	BecomeInit()
	if err := reopenLog(os.Getenv(wire.LogEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	// Before anything else runs here, so that everything inherits them.
	if err := ApplyLimits(os.Getenv(wire.LimitsEnv)); err != nil {
		return err
	}
	// Connected before the prestart and warm processes start, so nothing
	// else in the sandbox can have connected first.
	var in io.Reader = os.Stdin
	var out io.Writer = os.Stdout
	var socket *os.File
	path := os.Getenv(wire.SocketEnv)
	if path != "" {
		if conn, err := dialUnix(path); err == nil {
			in, out, socket = conn, conn, conn
		} else {
			fmt.Fprintf(os.Stderr, "agent: %v; serving on standard input and output\n", err)
			if err := wire.WriteFrame(os.Stdout, wire.Frame{Kind: wire.KindHello}); err != nil {
				return fmt.Errorf("writing hello: %w", err)
			}
		}
	}
	// The relay to the egress proxy takes its port before any program runs.
	if err := StartEgress(os.Getenv(wire.EgressEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	// Either failing leaves the job to run as in a cold sandbox.
	if err := StartPrestart(os.Getenv(wire.PrestartEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	if err := StartWarm(os.Getenv(wire.WarmEnv)); err != nil {
		fmt.Fprintln(os.Stderr, "agent:", err)
	}
	warmUp(wire.WorkspacePath)
	if grace := reattachGrace(os.Getenv(wire.ReattachEnv)); socket != nil && grace > 0 {
		return ServeReconnecting(socket, func() (io.ReadWriteCloser, error) { return dialUnix(path) }, grace)
	}
	return Serve(in, out)
}

// reopenLog makes the file at path (wire.LogEnv) the agent's standard
// output and error; "" leaves them as they are.
func reopenLog(path string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("opening its log: %w", err)
	}
	defer f.Close()
	for _, fd := range []int{1, 2} {
		if err := unix.Dup2(int(f.Fd()), fd); err != nil {
			return fmt.Errorf("moving its output to its log: %w", err)
		}
	}
	return nil
}

// reattachGrace reads [wire.ReattachEnv]; anything but a positive number of
// milliseconds means the sandbox does not wait for its server to return.
func reattachGrace(v string) time.Duration {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return 0
	}
	return time.Duration(ms) * time.Millisecond
}

// dialUnix connects to the Unix socket at path. The connection is a plain
// blocking descriptor, closed on exec so no stage inherits it.
func dialUnix(path string) (*os.File, error) {
	fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("creating socket: %w", err)
	}
	if err := unix.Connect(fd, &unix.SockaddrUnix{Name: path}); err != nil {
		_ = unix.Close(fd)
		return nil, fmt.Errorf("connecting to %s: %w", path, err)
	}
	return os.NewFile(uintptr(fd), "server"), nil
}

// warmUp runs, before the job arrives, the code paths its first
// milliseconds take: decoding a request and encoding results (the JSON
// package builds its per-type codecs on first use); and it opens what every
// run uses, the workspace and the cgroup's OOM counter, and keeps them open.
// Done at boot, that cost is off the run's latency (about 0.35 ms of a 5 ms
// bash hello world for the codecs).
func warmUp(workdir string) {
	var req wire.Request
	_ = json.Unmarshal([]byte(`{"op":"run","workdir":"/workspace","output_limit":1,"files":[{"path":"main.sh","data":"ZWNobyBoaQo="}],`+
		`"stages":[{"name":"run","argv":["sh","main.sh"],"env":["A=b"],"stdin":"eA==","timeout_ms":1}]}`), &req)
	_, _ = json.Marshal(wire.StageResult{Name: "run"})
	_, _ = json.Marshal(wire.Done{})
	if r, err := os.OpenRoot(workdir); err == nil {
		bootWorkspace.dir, bootWorkspace.root = workdir, r
	}
	oomFile()
}
