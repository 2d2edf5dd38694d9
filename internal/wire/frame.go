// Package wire is the contract between the server and the agent that runs
// first in every sandbox: the frames they exchange, the requests and results
// those frames carry, the environment the agent boots from, and the
// workspace and user every sandbox has. The agent and every backend's host
// side import it; the host side never imports the agent itself.
//
// The server sends the agent a framed Request on a byte stream (a socket or
// the sandbox's standard streams, as the backend provides); the agent writes
// the files into the workspace, runs each stage under its limits and streams
// framed output and results back. Moving everything through one stream
// avoids the backends' file-copy APIs (Docker's cannot see into tmpfs
// mounts) and lets one sandbox run a whole compile-and-run with no further
// API round trips.
package wire

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
)

// Frame kinds, the first byte of every frame header.
const (
	// KindRequest carries the JSON Request (engine to agent).
	KindRequest byte = 'Q'
	// KindStdout carries a chunk of a stage's standard output.
	KindStdout byte = 'O'
	// KindStderr carries a chunk of a stage's standard error.
	KindStderr byte = 'E'
	// KindStage carries a JSON StageResult when a stage ends.
	KindStage byte = 'S'
	// KindDone carries a JSON Done after the last stage; nothing follows.
	KindDone byte = 'D'
	// KindArtifact carries a JSON Artifact: a file the run created or changed.
	KindArtifact byte = 'A'
	// KindCancel (engine to agent, no payload) stops the request running now;
	// the sandbox stays usable (sessions).
	KindCancel byte = 'C'
	// KindHello (agent to engine, no payload) is the first frame on standard
	// output of an agent that was given a socket (SocketEnv) and could not
	// connect to it: it serves on its standard input and output instead.
	KindHello byte = 'H'
	// KindReady (both ways, no payload): from the engine, it asks whether
	// the sandbox is ready for a job; the agent answers with one once it
	// and what it started ahead of the job (a warm interpreter, a prestart
	// command) are. A pool counts a sandbox idle only once the answer came,
	// so that a run does not take a sandbox whose interpreter is still
	// loading. The agent speaks only when asked: output written before a
	// backend attached could be lost (Podman attaches after the start).
	KindReady byte = 'R'
)

// MaxFrameBytes bounds one frame's payload, so a corrupt or hostile stream
// cannot make a reader allocate without limit.
const MaxFrameBytes = 64 << 20

// headerLen is kind (1) + stage index (1) + payload length (4, big endian).
const headerLen = 6

// Frame is one message of the protocol.
type Frame struct {
	Kind    byte
	Stage   uint8
	Payload []byte
}

// WriteFrame writes one frame to w in a single Write call.
func WriteFrame(w io.Writer, f Frame) error {
	if len(f.Payload) > MaxFrameBytes {
		return fmt.Errorf("frame payload of %d bytes exceeds %d", len(f.Payload), MaxFrameBytes)
	}
	_, err := w.Write(AppendFrame(make([]byte, 0, headerLen+len(f.Payload)), f))
	return err
}

// AppendFrame appends f, encoded, to dst; the caller checks its size
// against MaxFrameBytes.
func AppendFrame(dst []byte, f Frame) []byte {
	dst = append(dst, f.Kind, f.Stage, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(dst[len(dst)-4:], uint32(len(f.Payload)))
	return append(dst, f.Payload...)
}

// ErrBadFrame reports a stream that is not a valid frame sequence.
var ErrBadFrame = errors.New("malformed frame")

// ReadFrame reads one frame from r. It returns io.EOF only at a clean frame
// boundary; a stream cut inside a frame gives io.ErrUnexpectedEOF.
func ReadFrame(r io.Reader) (Frame, error) { return ReadFrameLimit(r, MaxFrameBytes) }

// ReadFrameLimit is ReadFrame with a smaller bound on the payload.
func ReadFrameLimit(r io.Reader, limit int) (Frame, error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return Frame{}, err
	}
	switch h[0] {
	case KindRequest, KindStdout, KindStderr, KindStage, KindDone, KindArtifact, KindCancel, KindHello, KindReady, KindToolCall, KindToolResult:
	default:
		return Frame{}, fmt.Errorf("%w: unknown kind 0x%02x", ErrBadFrame, h[0])
	}
	n := binary.BigEndian.Uint32(h[2:6])
	if n > uint32(min(limit, MaxFrameBytes)) {
		return Frame{}, fmt.Errorf("%w: payload of %d bytes exceeds %d", ErrBadFrame, n, min(limit, MaxFrameBytes))
	}
	f := Frame{Kind: h[0], Stage: h[1], Payload: make([]byte, n)}
	if _, err := io.ReadFull(r, f.Payload); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return Frame{}, err
	}
	return f, nil
}
