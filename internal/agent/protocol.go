// Package agent is the small process that runs first in every sandbox. The
// engine sends it one framed Request on its attached stdin (files, stages,
// standard input, limits); the agent writes the files into the workspace,
// runs each stage under its limits and streams framed output and results back
// on its stdout. Moving everything through the attached stream avoids the
// Docker archive API, which cannot see into tmpfs mounts, and lets one
// container run a whole compile-and-run with no further API round trips.
package agent

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
	_, err := w.Write(appendFrame(make([]byte, 0, headerLen+len(f.Payload)), f))
	return err
}

// appendFrame appends f, encoded, to dst; the caller checks its size.
func appendFrame(dst []byte, f Frame) []byte {
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
	case KindRequest, KindStdout, KindStderr, KindStage, KindDone, KindArtifact, KindCancel, KindHello:
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

// File is one file to write into the workspace before the first stage.
type File struct {
	// Path is relative to the workspace; the agent checks it again.
	Path string `json:"path"`
	// Data is the file's content (base64 in JSON).
	Data []byte `json:"data"`
	// Mode is the permission bits; 0 means 0644.
	Mode uint32 `json:"mode,omitempty"`
}

// Stage is one command to run, in order; a stage that fails stops the rest
// when StopOnFailure is set (a compile error skips the run).
type Stage struct {
	Name string   `json:"name"`
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
	// Stdin is the stage's standard input; empty means /dev/null.
	Stdin []byte `json:"stdin,omitempty"`
	// TimeoutMs is the stage's wall-clock limit.
	TimeoutMs int64 `json:"timeout_ms"`
	// StopOnFailure skips later stages when this one does not exit 0.
	StopOnFailure bool `json:"stop_on_failure,omitempty"`
}

// Operations a Request may ask for; the empty Op runs the stages.
const (
	OpRun       = ""
	OpWriteFile = "write_file"
	OpReadFile  = "read_file"
	OpListFiles = "list_files"
	OpKernel    = "kernel"
)

// Request is one job. A one-shot sandbox gets exactly one; a session's
// sandbox gets many, one after another.
type Request struct {
	// Op is what to do; see the Op constants.
	Op      string  `json:"op,omitempty"`
	Workdir string  `json:"workdir"`
	Files   []File  `json:"files,omitempty"`
	Stages  []Stage `json:"stages"`
	// OutputLimit caps the bytes of stdout and of stderr, each, that the agent
	// forwards per stage; the rest is read and counted but dropped.
	OutputLimit int64 `json:"output_limit"`
	// Artifacts, if set, asks for the files the stages created or changed in
	// the workspace to be sent back after the last stage.
	Artifacts *ArtifactLimits `json:"artifacts,omitempty"`
	// Session keeps processes a stage leaves behind (a session's state);
	// one-shot requests kill them.
	Session bool `json:"session,omitempty"`
	// Path names the file of a read_file request, or the directory of a
	// list_files request ("" is the workspace).
	Path string `json:"path,omitempty"`
	// MaxReadBytes bounds a read_file answer.
	MaxReadBytes int64 `json:"max_read_bytes,omitempty"`
	// Kernel is the interpreter call of a kernel request.
	Kernel *KernelCall `json:"kernel,omitempty"`
}

// KernelCall runs code in a session's long-lived interpreter, whose
// variables and imports persist from call to call.
type KernelCall struct {
	// Name picks the kernel program embedded in the agent ("python",
	// "javascript").
	Name string `json:"name"`
	// Argv starts the interpreter; "{kernel}" is replaced by the path of
	// the kernel program.
	Argv []string `json:"argv"`
	Env  []string `json:"env,omitempty"`
	// Code is the cell to run.
	Code string `json:"code"`
	// TimeoutMs bounds the call; past it the interpreter is killed and the
	// next call starts a fresh one.
	TimeoutMs int64 `json:"timeout_ms"`
}

// ArtifactLimits bound the files sent back.
type ArtifactLimits struct {
	// MaxFiles is the most files sent with content.
	MaxFiles int `json:"max_files"`
	// MaxFileBytes is the largest file sent with content.
	MaxFileBytes int64 `json:"max_file_bytes"`
	// MaxTotalBytes bounds the content of all files together.
	MaxTotalBytes int64 `json:"max_total_bytes"`
	// MaxScan bounds the directory entries examined, so that a workspace of a
	// million files cannot stall the agent.
	MaxScan int `json:"max_scan"`
}

// Artifact is one file the run created or changed. Only regular files are
// reported; symlinks and other special files are never followed or read.
type Artifact struct {
	Path string `json:"path"`
	Size int64  `json:"size"`
	// Type is set in list_files answers: file, dir, symlink or other.
	Type string `json:"type,omitempty"`
	// Data is the content, absent when Skipped says why.
	Data    []byte `json:"data,omitempty"`
	Skipped string `json:"skipped,omitempty"`
}

// StageResult reports how one stage ended.
type StageResult struct {
	Name       string `json:"name"`
	ExitCode   int    `json:"exit_code"`
	Signal     string `json:"signal,omitempty"`
	TimedOut   bool   `json:"timed_out,omitempty"`
	OOMKilled  bool   `json:"oom_killed,omitempty"`
	DurationMs int64  `json:"duration_ms"`
	CPUTimeMs  int64  `json:"cpu_time_ms"`
	// MaxRSSKB is the largest resident set of any process the stage waited for.
	MaxRSSKB    int64 `json:"max_rss_kb"`
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
	// StdoutDropped and StderrDropped count bytes past OutputLimit.
	StdoutDropped int64 `json:"stdout_dropped,omitempty"`
	StderrDropped int64 `json:"stderr_dropped,omitempty"`
	// Error says why the stage could not start (command missing, say).
	Error string `json:"error,omitempty"`
	// Cancelled is set when the engine stopped the stage.
	Cancelled bool `json:"cancelled,omitempty"`
	// Value is the repr of a kernel cell's last expression, if any.
	Value string `json:"value,omitempty"`
	// KernelRestarted is set when the call started a fresh interpreter
	// (its first call, or after a timeout or crash lost the old one).
	KernelRestarted bool `json:"kernel_restarted,omitempty"`
}

// Done ends the stream.
type Done struct {
	// Error is set when the request itself was refused (a bad file path).
	Error string `json:"error,omitempty"`
}
