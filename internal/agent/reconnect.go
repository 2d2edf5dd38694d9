package agent

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"
)

// Redial backoff: the first retry comes soon, for a server that restarts
// at once; later ones are spaced so that a long wait costs the sandbox
// next to nothing.
const (
	redialFirst = 20 * time.Millisecond
	redialMost  = 500 * time.Millisecond
)

// ServeReconnecting serves a session sandbox's server over conn, and
// whenever that connection ends (the server restarted, crashed or lost
// its link) keeps what the sandbox holds, its interpreters and its
// workspace, and dials the server's socket again with dial until one
// connects or grace has passed since the connection ended; then it
// serves that one the same way. A request running when the connection
// ends is cancelled: nobody is left to read its result. When grace
// passes with no server, it returns, and the sandbox ends as a one-shot
// sandbox does after its job.
//
// Only the server the sandbox belongs to can accept the connection: the
// socket's directory is read-only in the sandbox, so no program here can
// listen in its place, and the server checks that the peer is this
// process, the sandbox's init (see sandbox.PeerIsInit).
func ServeReconnecting(conn io.ReadWriteCloser, dial func() (io.ReadWriteCloser, error), grace time.Duration) error {
	a := newServer()
	a.reconnecting = true
	defer a.closeKernels()
	for {
		_, err := a.serveConn(conn, conn, true)
		if errors.Is(err, errCheckpoint) {
			// The connection's reader is blocked in read(2) on it, which
			// a close would wait for: a shutdown ends both at once.
			shutdown(conn)
		}
		_ = conn.Close()
		fmt.Fprintf(os.Stderr, "agent: the server's connection ended (%v); waiting up to %s for it to connect again\n", err, grace)
		if conn, err = redial(dial, grace); err != nil {
			return err
		}
		if a.checkpointed {
			a.checkpointed = false
			goOn()
		}
	}
}

// redial calls dial until it connects or grace has passed.
func redial(dial func() (io.ReadWriteCloser, error), grace time.Duration) (io.ReadWriteCloser, error) {
	deadline := time.Now().Add(grace)
	wait := redialFirst
	for {
		conn, err := dial()
		if err == nil {
			return conn, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fmt.Errorf("no server connected again within %s: %w", grace, err)
		}
		time.Sleep(min(wait, left))
		wait = min(2*wait, redialMost)
	}
}
