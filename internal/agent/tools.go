package agent

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// maxToolLine bounds one call a program sends on the tools socket.
const maxToolLine = 8 << 20

// maxToolConns bounds the program's connections to the tools socket served
// at once: each holds a goroutine and a descriptor of the agent's.
const maxToolConns = 64

// tools is the agent's end of code mode: a directory with the run's
// libraries and a Unix socket in it, on which the programs of a request
// given tools send their calls, one JSON line each; the agent forwards
// each as a wire.KindToolCall frame over its link to the server and
// writes the wire.KindToolResult it gets back as the answer line. The
// socket is made the first time a request is given tools and serves the
// sandbox's later requests too (a session's); between requests a call is
// refused, since no run is there to answer for it.
type tools struct {
	dir string
	ln  *net.UnixListener

	mu      sync.Mutex
	w       *frameWriter // the current request's connection; nil between requests
	nextID  uint64
	pending map[uint64]chan wire.ToolResult
}

// toolCallLine is what a program sends: a call of a tool of a server.
type toolCallLine struct {
	Server    string          `json:"server"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
}

// answerLine is what a program reads back.
type answerLine struct {
	Result json.RawMessage `json:"result,omitempty"`
	Error  string          `json:"error,omitempty"`
}

// equipTools readies code mode for req: the libraries written (again), the
// socket listening, and the stages' (or the kernel call's) environment
// pointing at them. The calls are served until endTools.
func (a *server) equipTools(req *wire.Request) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.tools == nil {
		dir, err := os.MkdirTemp("", "mcr-tools-")
		if err != nil {
			return fmt.Errorf("code mode: making the tools directory: %w", err)
		}
		ln, err := net.ListenUnix("unix", &net.UnixAddr{Name: filepath.Join(dir, "sock"), Net: "unix"})
		if err != nil {
			return fmt.Errorf("code mode: listening for tool calls: %w", err)
		}
		a.tools = &tools{dir: dir, ln: ln, pending: map[uint64]chan wire.ToolResult{}}
		go serveBounded(ln, maxToolConns, a.tools.conn)
	}
	t := a.tools
	for _, f := range req.Tools.Files {
		if err := wire.ValidPath(f.Path); err != nil {
			return fmt.Errorf("code mode: library file: %w", err)
		}
		p := filepath.Join(t.dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return fmt.Errorf("code mode: %w", err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			return fmt.Errorf("code mode: %w", err)
		}
	}
	for i := range req.Stages {
		req.Stages[i].Env = t.env(req.Stages[i].Env)
	}
	if req.Kernel != nil {
		req.Kernel.Env = t.env(req.Kernel.Env)
	}
	t.mu.Lock()
	t.w = a.w
	t.mu.Unlock()
	return nil
}

// endTools stops serving calls for the request that ended: the calls
// still waiting are answered with an error.
func (a *server) endTools() {
	a.mu.Lock()
	t := a.tools
	a.mu.Unlock()
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.w = nil
	for id, ch := range t.pending {
		ch <- wire.ToolResult{ID: id, Error: "the run ended before the call was answered"}
		delete(t.pending, id)
	}
}

// deliverTool hands a result frame to the call waiting for it; one for a
// call no longer waiting is dropped.
func (a *server) deliverTool(payload []byte) {
	a.mu.Lock()
	t := a.tools
	a.mu.Unlock()
	var res wire.ToolResult
	if t == nil || json.Unmarshal(payload, &res) != nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ch, ok := t.pending[res.ID]; ok {
		ch <- res
		delete(t.pending, res.ID)
	}
}

// env is a stage's environment with code mode's: the socket, the
// TypeScript declarations, and the libraries before the paths already
// set (a run's installed packages).
func (t *tools) env(env []string) []string {
	out := append([]string(nil), env...)
	prepend := func(key, value, sep string) {
		old := os.Getenv(key)
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, key+"="); ok {
				old = v
			}
		}
		if old != "" {
			value += sep + old
		}
		out = append(out, key+"="+value)
	}
	prepend("PYTHONPATH", filepath.Join(t.dir, "python"), ":")
	prepend("NODE_PATH", filepath.Join(t.dir, "node_modules"), ":")
	prepend("NODE_OPTIONS", "--import=file://"+filepath.Join(t.dir, "register.mjs"), " ")
	return append(out, wire.ToolsEnv+"="+filepath.Join(t.dir, "sock"), wire.ToolsTypesEnv+"="+filepath.Join(t.dir, "types", "mcr-tools.d.ts"))
}

// conn serves one connection: calls, one JSON line each, answered in turn.
func (t *tools) conn(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 64<<10)
	for {
		line, err := readLine(r, maxToolLine)
		if err != nil {
			if errors.Is(err, errLineTooLong) {
				_ = writeAnswer(c, answerLine{Error: fmt.Sprintf("a call is at most %d bytes", maxToolLine)})
			}
			return
		}
		var call toolCallLine
		if err := json.Unmarshal(line, &call); err != nil {
			_ = writeAnswer(c, answerLine{Error: "a call is one JSON line: {\"server\": ..., \"tool\": ..., \"arguments\": {...}}"})
			return
		}
		if err := writeAnswer(c, t.call(call)); err != nil {
			return
		}
	}
}

// call forwards one call to the server and waits for its result.
func (t *tools) call(call toolCallLine) answerLine {
	ch := make(chan wire.ToolResult, 1)
	t.mu.Lock()
	w := t.w
	if w == nil {
		t.mu.Unlock()
		return answerLine{Error: "no run is in progress to make the call for (a call from a process left running after its run)"}
	}
	t.nextID++
	id := t.nextID
	t.pending[id] = ch
	t.mu.Unlock()
	payload, err := json.Marshal(wire.ToolCall{ID: id, Server: call.Server, Tool: call.Tool, Arguments: call.Arguments})
	if err == nil && len(payload) > wire.MaxFrameBytes {
		err = fmt.Errorf("a call of %d bytes is more than a frame carries", len(payload))
	}
	if err == nil {
		err = w.write(wire.Frame{Kind: wire.KindToolCall, Payload: payload})
	}
	if err != nil {
		t.mu.Lock()
		delete(t.pending, id)
		t.mu.Unlock()
		return answerLine{Error: "sending the call to the server: " + err.Error()}
	}
	res := <-ch
	return answerLine{Result: res.Result, Error: res.Error}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most limit bytes, without its newline.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > limit {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			return nil, err
		}
	}
}

func writeAnswer(c net.Conn, a answerLine) error {
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	_, err = c.Write(append(b, '\n'))
	return err
}
