package agent

import (
	"encoding/json"
	"fmt"
	"io"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// chunkBytes is the largest output chunk forwarded in one frame.
const chunkBytes = 32 << 10

// frameWriter serializes frames from the stage's output readers.
type frameWriter struct {
	mu     sync.Mutex
	w      io.Writer
	failed error
	// held collects frames while holding, to be written at once by flush.
	holding bool
	held    []byte
}

// heldBytes is the most frames held back before they are written anyway.
const heldBytes = 64 << 10

func (fw *frameWriter) write(f wire.Frame) error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	if fw.failed != nil {
		return fw.failed
	}
	if fw.holding {
		if len(f.Payload) > wire.MaxFrameBytes {
			fw.failed = fmt.Errorf("frame payload of %d bytes exceeds %d", len(f.Payload), wire.MaxFrameBytes)
			return fw.failed
		}
		fw.held = wire.AppendFrame(fw.held, f)
		if len(fw.held) >= heldBytes {
			fw.writeHeld()
		}
		return fw.failed
	}
	fw.failed = wire.WriteFrame(fw.w, f)
	return fw.failed
}

// hold makes the frames that follow wait for flush, so that they leave in
// one write.
func (fw *frameWriter) hold() {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.holding = true
}

// flush writes the frames held and stops holding.
func (fw *frameWriter) flush() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	fw.holding = false
	if fw.failed == nil {
		fw.writeHeld()
	}
	return fw.failed
}

func (fw *frameWriter) writeHeld() {
	if len(fw.held) > 0 {
		_, fw.failed = fw.w.Write(fw.held)
		fw.held = fw.held[:0]
		if cap(fw.held) > 2*heldBytes {
			fw.held = nil // an artifact's worth of memory is not kept for later
		}
	}
}

func (fw *frameWriter) json(kind byte, stage uint8, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return fw.write(wire.Frame{Kind: kind, Stage: stage, Payload: b})
}

func (fw *frameWriter) err() error {
	fw.mu.Lock()
	defer fw.mu.Unlock()
	return fw.failed
}

// pump forwards r as frames of kind until EOF, forwarding at most limit
// bytes and counting the rest. It returns total bytes and dropped bytes.
func pump(fw *frameWriter, kind byte, stage uint8, r io.Reader, limit int64) (total, dropped int64) {
	buf := make([]byte, chunkBytes)
	for {
		n, err := r.Read(buf)
		if n > 0 {
			keep := int64(n)
			if room := limit - (total - dropped); keep > room {
				keep = max(room, 0)
			}
			if keep > 0 {
				_ = fw.write(wire.Frame{Kind: kind, Stage: stage, Payload: buf[:keep]})
			}
			total += int64(n)
			dropped += int64(n) - keep
		}
		if err != nil {
			return total, dropped
		}
	}
}
