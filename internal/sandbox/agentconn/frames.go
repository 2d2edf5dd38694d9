package agentconn

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// inlineRequestBytes is the largest request written before the answer is
// read rather than beside it: it fits the buffers between here and the
// agent, so writing it cannot wait for the agent to read.
const inlineRequestBytes = 32 << 10

// HostFrameLimit bounds one frame read from a sandbox: the largest
// legitimate one is an artifact of artifacts.max_file_bytes in JSON.
const HostFrameLimit = 24 << 20

// MaxListEntries bounds the file entries of one answer (list_files).
const MaxListEntries = 10001

// DefaultOutputLimit is the output kept per stage and stream of a request
// that sets none.
const DefaultOutputLimit = 1 << 20

// DefaultDataLimit bounds the file content kept from one answer of a
// request that sets no artifact or read limit.
const DefaultDataLimit = 64 << 20

// readFrames consumes the agent's frames into res; it reports whether the
// Done frame arrived. Whatever the sandbox sends, what is kept is bounded:
// the agent enforces the output limit, but a hostile program could write
// frames of its own, so the server enforces it again (per stage and stream),
// and bounds stages, file entries and their content. A tool call goes to
// tools, which answers it (nil: the frame is not one the agent sends).
func readFrames(r io.Reader, req wire.Request, res *sandbox.Result, onChunk func(sandbox.Chunk), tools *toolCalls) bool {
	fr := newFrameReader(req, res, onChunk)
	for {
		f, err := wire.ReadFrameLimit(r, HostFrameLimit)
		if err != nil {
			return false
		}
		if int(f.Stage) >= fr.maxStages {
			return false // not a frame the agent would send
		}
		switch f.Kind {
		case wire.KindHello, wire.KindReady:
			// An agent that could not reach its socket says so first; a
			// Ready the agent was asked for is no part of the answer.
		case wire.KindStdout, wire.KindStderr:
			fr.output(f)
		case wire.KindStage:
			st := fr.stage(f.Stage)
			out, errOut := st.Stdout, st.Stderr
			if err := json.Unmarshal(f.Payload, &st.StageResult); err != nil {
				return false
			}
			st.Stdout, st.Stderr = out, errOut
		case wire.KindArtifact:
			if !fr.artifact(f) {
				return false
			}
		case wire.KindToolCall:
			if tools == nil || !tools.handle(f.Payload) {
				return false
			}
		case wire.KindDone:
			var d wire.Done
			if err := json.Unmarshal(f.Payload, &d); err != nil {
				return false
			}
			res.AgentError = d.Error
			return true
		default:
			return false
		}
	}
}

// frameReader keeps one answer's frames within the request's bounds.
type frameReader struct {
	stages    []wire.Stage
	maxStages int
	outLimit  int64 // per stage and stream
	dataLimit int64 // all file content
	dataKept  int64
	res       *sandbox.Result
	onChunk   func(sandbox.Chunk)
}

func newFrameReader(req wire.Request, res *sandbox.Result, onChunk func(sandbox.Chunk)) *frameReader {
	fr := &frameReader{stages: req.Stages, maxStages: max(len(req.Stages), 1), outLimit: req.OutputLimit,
		dataLimit: DefaultDataLimit, res: res, onChunk: onChunk}
	if fr.outLimit <= 0 {
		fr.outLimit = DefaultOutputLimit
	}
	if req.Artifacts != nil {
		fr.dataLimit = req.Artifacts.MaxTotalBytes
	}
	if req.MaxReadBytes > 0 {
		fr.dataLimit = req.MaxReadBytes
	}
	return fr
}

// stage is stage i's entry of the result. It exists from the stage's first
// frame, named after the request, so output of a stage that never reported
// (killed) is kept.
func (fr *frameReader) stage(i uint8) *sandbox.StageOutput {
	for len(fr.res.Stages) <= int(i) {
		st := sandbox.StageOutput{}
		if n := len(fr.res.Stages); n < len(fr.stages) {
			st.Name = fr.stages[n].Name
		}
		fr.res.Stages = append(fr.res.Stages, st)
	}
	return &fr.res.Stages[i]
}

// keep appends to buf what of p fits the output limit, and returns it.
func (fr *frameReader) keep(buf *[]byte, p []byte) []byte {
	room := fr.outLimit - int64(len(*buf))
	if room <= 0 {
		return nil
	}
	if int64(len(p)) > room {
		p = p[:room]
	}
	*buf = append(*buf, p...)
	return p
}

// output keeps a stdout or stderr frame within the limit and passes on
// what it kept.
func (fr *frameReader) output(f wire.Frame) {
	st := fr.stage(f.Stage)
	stream := sandbox.Stdout
	var kept []byte
	if f.Kind == wire.KindStdout {
		kept = fr.keep(&st.Stdout, f.Payload)
	} else {
		kept = fr.keep(&st.Stderr, f.Payload)
		stream = sandbox.Stderr
	}
	if fr.onChunk != nil && len(kept) > 0 {
		fr.onChunk(sandbox.Chunk{Stage: int(f.Stage), Stream: stream, Data: kept})
	}
}

// artifact keeps a file entry, its content while all content stays within
// the limit, and at most MaxListEntries entries; it reports whether the
// frame was readable.
func (fr *frameReader) artifact(f wire.Frame) bool {
	if len(fr.res.Artifacts) >= MaxListEntries {
		return true
	}
	var a wire.Artifact
	if err := json.Unmarshal(f.Payload, &a); err != nil {
		return false
	}
	if n := int64(len(a.Data)); n > 0 {
		if fr.dataKept+n > fr.dataLimit {
			a.Data, a.Skipped = nil, "over the size limit of the files returned"
		} else {
			fr.dataKept += n
		}
	}
	fr.res.Artifacts = append(fr.res.Artifacts, a)
	return true
}

// DiagnosticsLimit is how much of an agent's standard error a Diagnostics
// keeps.
const DiagnosticsLimit = 64 << 10

// Diagnostics keeps the first DiagnosticsLimit bytes written to it: a
// backend copies its agent's standard error there for Link.Diagnostics.
type Diagnostics struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write keeps what fits and reports all of p written, so that a copy into
// it never stops.
func (d *Diagnostics) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if room := DiagnosticsLimit - d.buf.Len(); room > 0 {
		d.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// String returns what was kept.
func (d *Diagnostics) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.buf.String()
}
