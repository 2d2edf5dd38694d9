package agent

import (
	"errors"
	"io"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// A checkpoint of the sandbox (wire.OpCheckpoint).
//
// CRIU checks, before it dumps a sandbox in a user namespace, that it may
// open each process's namespaces from inside that user namespace. The
// agent is not dumpable (BecomeInit); for an agent that a restore made,
// whose memory then belongs to the host's user namespace, that makes the
// check fail, so such an agent is dumpable from its answer until its next
// connection: the time crun takes to start CRIU and freeze the sandbox,
// about a tenth of a second (docs/SECURITY.md weighs it). An agent that
// was never restored stays undumpable throughout. (Stopping the sandbox's
// other processes for that time instead makes CRIU wait forever on a
// cgroup v1 freezer.)

// errCheckpoint ends a connection after wire.OpCheckpoint.
var errCheckpoint = errors.New("the server takes a checkpoint of the sandbox")

// readyForCheckpoint answers wire.OpCheckpoint.
func (a *server) readyForCheckpoint() error {
	done := wire.Done{}
	if !a.reconnecting {
		done.Error = "this sandbox does not wait for its server: it cannot be checkpointed"
	} else {
		if a.checkpoints > 0 {
			_ = unix.Prctl(unix.PR_SET_DUMPABLE, 1, 0, 0, 0)
		}
		a.checkpoints++
		a.checkpointed = true
	}
	return a.w.json(wire.KindDone, 0, done)
}

// goOn makes the agent undumpable again after a checkpoint.
func goOn() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}

// shutdown shuts conn down both ways, when it is a socket.
func shutdown(conn io.ReadWriteCloser) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return
	}
	_ = raw.Control(func(fd uintptr) { _ = unix.Shutdown(int(fd), unix.SHUT_RDWR) })
}
