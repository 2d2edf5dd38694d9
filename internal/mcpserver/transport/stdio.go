package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
)

// NewStdio returns the transport `serve` speaks on stdin and
// stdout: the SDK's newline-delimited JSON-RPC (mcp.IOTransport, as
// mcp.StdioTransport builds it), except that a request the client cancelled
// with notifications/cancelled gets no response. The SDK (v1.8.0) cancels
// the handler's context but still writes whatever the handler returns (for
// run_code, a "killed" result); the specification says the receiver should
// not answer a cancelled request. The transport watches the bytes both ways
// without changing what the SDK reads, so the SDK's own framing, line limit
// and batch rules stay as they are. It also carries a 2025-11-25 tools/call's
// params.task past the SDK ([tasks.Transport]).
func NewStdio() mcp.Transport {
	return tasks.Transport(newCancelAwareTransport(os.Stdin, nopWriteCloser{os.Stdout}, nil))
}

// newCancelAwareTransport is NewStdio on r and w; onDrop, if set,
// sees the key of every response it drops.
func newCancelAwareTransport(r io.ReadCloser, w io.WriteCloser, onDrop func(id string)) mcp.Transport {
	calls := &stdioCalls{pending: map[string]bool{}, onDrop: onDrop}
	return &mcp.IOTransport{Reader: &callReader{ReadCloser: r, calls: calls}, Writer: &callWriter{WriteCloser: w, calls: calls}}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// stdioCalls knows the client's requests that have no response yet, and
// which of them the client cancelled. An entry lives from the request's
// line to its response's, so the map is as large as the calls in flight.
type stdioCalls struct {
	mu      sync.Mutex
	pending map[string]bool // request id key -> cancelled
	onDrop  func(id string)
}

// envelope is what the transport reads of a JSON-RPC message.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		RequestID json.RawMessage `json:"requestId"`
	} `json:"params"`
}

// idKey is a comparable form of a JSON-RPC id: the SDK writes 7 for a
// request that said 7 or 7.0. It is "" for a missing or null id.
func idKey(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return ""
	}
	if raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) != nil {
			return ""
		}
		return "s" + s
	}
	f, err := strconv.ParseFloat(string(raw), 64)
	if err != nil {
		return ""
	}
	return "n" + strconv.FormatFloat(f, 'g', -1, 64)
}

// messages decodes one line: a message or a batch of them.
func messages(line []byte) []envelope {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return nil
	}
	if line[0] == '[' {
		var batch []envelope
		if json.Unmarshal(line, &batch) != nil {
			return nil
		}
		return batch
	}
	var m envelope
	if json.Unmarshal(line, &m) != nil {
		return nil
	}
	return []envelope{m}
}

// received notes the client's requests and cancellations in one line.
func (c *stdioCalls) received(line []byte) {
	for _, m := range messages(line) {
		switch {
		case m.Method == "notifications/cancelled":
			k := idKey(m.Params.RequestID)
			c.mu.Lock()
			if _, ok := c.pending[k]; ok {
				c.pending[k] = true
			}
			c.mu.Unlock()
		case m.Method != "":
			if k := idKey(m.ID); k != "" {
				c.mu.Lock()
				c.pending[k] = false
				c.mu.Unlock()
			}
		}
	}
}

// answered reports whether the response with id key k may be sent, and
// forgets the request.
func (c *stdioCalls) answered(k string) bool {
	c.mu.Lock()
	cancelled, ok := c.pending[k]
	if ok {
		delete(c.pending, k)
	}
	c.mu.Unlock()
	if cancelled && c.onDrop != nil {
		c.onDrop(k)
	}
	return !cancelled
}

// callReader passes the client's bytes through unchanged and hands every
// complete line to stdioCalls before the SDK can act on it: a cancellation
// is noted before the SDK cancels the handler that would answer it.
type callReader struct {
	io.ReadCloser
	calls *stdioCalls
	line  []byte
}

func (r *callReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	data := p[:n]
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			r.line = appendCapped(r.line, data)
			break
		}
		line := data[:i]
		if len(r.line) > 0 {
			r.line = appendCapped(r.line, line)
			line = r.line
		}
		r.calls.received(line)
		if cap(r.line) > 64<<10 {
			r.line = nil // a large request's buffer is not kept for the next line
		} else {
			r.line = r.line[:0]
		}
		data = data[i+1:]
	}
	return n, err
}

// appendCapped appends to a partial line up to the SDK's own line limit; a
// longer line is an error for the SDK anyway.
func appendCapped(line, data []byte) []byte {
	if room := mcp.DefaultMaxLineLength - len(line); len(data) > room {
		data = data[:max(room, 0)]
	}
	return append(line, data...)
}

// callWriter drops the responses to cancelled requests. The SDK writes one
// message (or one batch) a call, newline included.
type callWriter struct {
	io.WriteCloser
	calls *stdioCalls
}

func (w *callWriter) Write(p []byte) (int, error) {
	line := bytes.TrimSpace(p)
	if len(line) > 0 && line[0] == '[' {
		return w.writeBatch(p, line)
	}
	var m envelope
	if json.Unmarshal(line, &m) == nil && m.Method == "" {
		if k := idKey(m.ID); k != "" && !w.calls.answered(k) {
			return len(p), nil
		}
	}
	return w.WriteCloser.Write(p)
}

// writeBatch writes a batch of responses without those to cancelled
// requests (nothing when that leaves none).
func (w *callWriter) writeBatch(p, line []byte) (int, error) {
	var batch []json.RawMessage
	if json.Unmarshal(line, &batch) != nil {
		return w.WriteCloser.Write(p)
	}
	kept := batch[:0]
	for _, raw := range batch {
		var m envelope
		if json.Unmarshal(raw, &m) == nil && m.Method == "" {
			if k := idKey(m.ID); k != "" && !w.calls.answered(k) {
				continue
			}
		}
		kept = append(kept, raw)
	}
	switch {
	case len(kept) == len(batch):
		return w.WriteCloser.Write(p)
	case len(kept) == 0:
		return len(p), nil
	}
	out, err := json.Marshal(kept)
	if err != nil {
		return 0, err
	}
	if _, err := w.WriteCloser.Write(append(out, '\n')); err != nil {
		return 0, err
	}
	return len(p), nil
}
