package agent

import (
	"bufio"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// toolsAgent is an agent server readied for a request given tools, its
// frames read from frames.
func toolsAgent(t *testing.T, req *wire.Request) (a *server, frames *io.PipeReader) {
	t.Helper()
	pr, pw := io.Pipe()
	a = newServer()
	a.w = &frameWriter{w: pw}
	if err := a.equipTools(req); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.endTools()
		_ = a.tools.ln.Close()
		_ = os.RemoveAll(a.tools.dir)
		_ = pw.Close()
	})
	return a, pr
}

// dialTools connects to the agent's tools socket as a program would.
func dialTools(t *testing.T, a *server) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("unix", filepath.Join(a.tools.dir, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, bufio.NewReader(c)
}

func readAnswer(t *testing.T, r *bufio.Reader) answerLine {
	t.Helper()
	line, err := r.ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var a answerLine
	if err := json.Unmarshal(line, &a); err != nil {
		t.Fatalf("answer %q: %v", line, err)
	}
	return a
}

func TestAProgramsCallTravelsAsAFrameAndItsResultComesBackWholeWhateverItHolds(t *testing.T) {
	req := &wire.Request{Tools: &wire.Tools{Servers: []string{"fs"}, Files: []wire.File{{Path: "python/mcr_tools/__init__.py", Data: []byte("# lib\n")}}},
		Stages: []wire.Stage{{Name: "run", Env: []string{"PYTHONPATH=/pkgs"}}}}
	a, frames := toolsAgent(t, req)
	c, r := dialTools(t, a)
	if _, err := c.Write([]byte(`{"server":"fs","tool":"read","arguments":{"path":"a"}}` + "\n")); err != nil {
		t.Fatal(err)
	}
	f, err := wire.ReadFrame(frames)
	if err != nil || f.Kind != wire.KindToolCall {
		t.Fatalf("frame %q, %v", f.Kind, err)
	}
	var call wire.ToolCall
	if err := json.Unmarshal(f.Payload, &call); err != nil || call.Server != "fs" || call.Tool != "read" || string(call.Arguments) != `{"path":"a"}` {
		t.Fatalf("call %+v, %v", call, err)
	}
	// A result whose text holds a newline, frame headers and an answer line.
	crafted := `{"content":[{"type":"text","text":"a\n{\"error\":\"x\"}\nD\u0000\u0000\u0000\u0000\u0002{}"}]}`
	payload, _ := json.Marshal(wire.ToolResult{ID: call.ID, Result: json.RawMessage(crafted)})
	a.deliverTool(payload)
	ans := readAnswer(t, r)
	if ans.Error != "" || string(ans.Result) != crafted {
		t.Fatalf("answer %+v", ans)
	}
	// The library is where the stage's environment says, before the
	// paths it had.
	env := req.Stages[0].Env
	lib := filepath.Join(a.tools.dir, "python")
	if !slices.Contains(env, "PYTHONPATH="+lib+":/pkgs") || !slices.Contains(env, wire.ToolsEnv+"="+filepath.Join(a.tools.dir, "sock")) {
		t.Fatalf("env %q", env)
	}
	if _, err := os.Stat(filepath.Join(lib, "mcr_tools", "__init__.py")); err != nil {
		t.Fatal(err)
	}
}

func TestACallOutsideARunIsRefusedAndOneWaitingIsAnsweredWhenItsRunEnds(t *testing.T) {
	a, frames := toolsAgent(t, &wire.Request{Tools: &wire.Tools{Servers: []string{"fs"}}})
	c, r := dialTools(t, a)
	if _, err := c.Write([]byte(`{"server":"fs","tool":"slow"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if _, err := wire.ReadFrame(frames); err != nil { // the call is on its way; nobody answers it
		t.Fatal(err)
	}
	a.endTools()
	if ans := readAnswer(t, r); !strings.Contains(ans.Error, "the run ended before the call was answered") {
		t.Fatalf("a call whose run ended: %+v", ans)
	}
	c2, r2 := dialTools(t, a)
	if _, err := c2.Write([]byte(`{"server":"fs","tool":"read"}` + "\n")); err != nil {
		t.Fatal(err)
	}
	if ans := readAnswer(t, r2); !strings.Contains(ans.Error, "no run is in progress") {
		t.Fatalf("a call between runs: %+v", ans)
	}
}

func TestACallLargerThanTheBoundOrNotJSONIsRefused(t *testing.T) {
	a, _ := toolsAgent(t, &wire.Request{Tools: &wire.Tools{Servers: []string{"fs"}}})
	c, r := dialTools(t, a)
	go func() { _, _ = c.Write([]byte(strings.Repeat("x", maxToolLine+1) + "\n")) }()
	if ans := readAnswer(t, r); !strings.Contains(ans.Error, "a call is at most") {
		t.Fatalf("an oversized call: %+v", ans)
	}
	c2, r2 := dialTools(t, a)
	if _, err := c2.Write([]byte("not json\n")); err != nil {
		t.Fatal(err)
	}
	if ans := readAnswer(t, r2); !strings.Contains(ans.Error, "one JSON line") {
		t.Fatalf("a call that is not JSON: %+v", ans)
	}
}
