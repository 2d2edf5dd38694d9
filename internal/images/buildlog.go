package images

import (
	"bytes"
	"io"
	"sync"
)

// buildLogs shares one log among builds that run side by side. Each build
// writes through its own writer, which passes on whole lines only, so that
// two builds' lines never mix; with prefixed set, each line starts with
// "[image] ", so that a reader (and setup's progress display) can tell the
// builds apart.
type buildLogs struct {
	mu       sync.Mutex
	w        io.Writer
	prefixed bool
}

func newBuildLogs(w io.Writer, prefixed bool) *buildLogs {
	return &buildLogs{w: w, prefixed: prefixed}
}

// of returns the writer of image name's build; Close passes on a last line
// that has no newline.
func (l *buildLogs) of(name string) *buildLog {
	b := &buildLog{logs: l}
	if l.prefixed {
		b.prefix = []byte("[" + name + "] ")
	}
	return b
}

type buildLog struct {
	logs    *buildLogs
	prefix  []byte
	partial []byte
}

func (b *buildLog) Write(p []byte) (int, error) {
	b.partial = append(b.partial, p...)
	i := bytes.LastIndexByte(b.partial, '\n')
	if i < 0 {
		return len(p), nil
	}
	b.flush(b.partial[:i+1])
	b.partial = append(b.partial[:0], b.partial[i+1:]...)
	return len(p), nil
}

// Close passes on what is left of the last line.
func (b *buildLog) Close() {
	if len(b.partial) > 0 {
		b.flush(append(b.partial, '\n'))
		b.partial = nil
	}
}

func (b *buildLog) flush(lines []byte) {
	var out []byte
	if len(b.prefix) == 0 {
		out = lines
	} else {
		for len(lines) > 0 {
			i := bytes.IndexByte(lines, '\n')
			out = append(append(out, b.prefix...), lines[:i+1]...)
			lines = lines[i+1:]
		}
	}
	b.logs.mu.Lock()
	defer b.logs.mu.Unlock()
	_, _ = b.logs.w.Write(out)
}
