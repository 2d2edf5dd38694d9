package transport

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioPeer is a raw JSON-RPC client of a server on the stdio transport:
// it writes lines and reads the server's lines, nothing in between.
type stdioPeer struct {
	t       *testing.T
	in      *io.PipeWriter
	lines   chan string
	dropped chan string
	started chan struct{}
}

// newStdioPeer serves a server whose "wait" tool blocks until its call is
// cancelled and then answers anyway, as run_code answers "killed".
func newStdioPeer(t *testing.T) *stdioPeer {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	p := &stdioPeer{t: t, in: inW, lines: make(chan string, 16), dropped: make(chan string, 4), started: make(chan struct{}, 4)}
	s := mcp.NewServer(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		p.started <- struct{}{}
		<-ctx.Done()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "killed"}}}, nil, nil
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- s.Run(ctx, newCancelAwareTransport(inR, outW, func(id string) { p.dropped <- id }))
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
		close(p.lines)
	}()
	t.Cleanup(func() {
		cancel()
		_ = inW.Close()
		if err := <-done; err != nil {
			t.Logf("the server ended: %v", err)
		}
		_ = outW.Close()
	})
	p.send(`{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
	p.expect(`"id":0`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return p
}

func (p *stdioPeer) send(line string) {
	p.t.Helper()
	if _, err := io.WriteString(p.in, line+"\n"); err != nil {
		p.t.Fatalf("writing %s: %v", line, err)
	}
}

// expect returns the server's next line, which must contain want.
func (p *stdioPeer) expect(want string) string {
	p.t.Helper()
	select {
	case line, ok := <-p.lines:
		if !ok {
			p.t.Fatalf("the server closed stdout; want a line with %s", want)
		}
		if !strings.Contains(line, want) {
			p.t.Fatalf("the server's next line is %s; want one with %s", line, want)
		}
		return line
	case <-time.After(30 * time.Second):
		p.t.Fatalf("no line with %s from the server within 30 s", want)
	}
	return ""
}

func waitOn[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen within 30 s", what)
	}
	var zero T
	return zero
}

func TestStdioTransport(t *testing.T) {
	for _, tc := range []struct {
		name, id string
	}{
		{"a call cancelled with notifications/cancelled gets no response (numeric id)", `7`},
		{"a call cancelled with notifications/cancelled gets no response (string id)", `"call-7"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newStdioPeer(t)
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"wait","arguments":{}}}`, tc.id))
			waitOn(t, p.started, "the tool call's start")
			p.send(fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"test"}}`, tc.id))
			waitOn(t, p.dropped, "the drop of the cancelled call's response")
			// The next line the server writes answers the ping: nothing
			// came for the cancelled call before it.
			p.send(`{"jsonrpc":"2.0","id":"ping-1","method":"ping"}`)
			p.expect(`"id":"ping-1"`)
		})
	}
	t.Run("a call that is not cancelled is answered, and a cancellation of an answered call changes nothing", func(t *testing.T) {
		p := newStdioPeer(t)
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		p.expect(`"id":1`)
		p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`)
		// The next request, answered. (A new id: MCP forbids reusing one in
		// a session, and the SDK may apply a late cancellation to a reuse.)
		p.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		line := p.expect(`"id":2`)
		var resp struct {
			Result struct {
				Tools []struct{ Name string }
			}
		}
		if err := json.Unmarshal([]byte(line), &resp); err != nil || len(resp.Result.Tools) != 1 {
			t.Fatalf("tools/list answer %s (%v); want the one tool", line, err)
		}
		select {
		case id := <-p.dropped:
			t.Fatalf("the response to %s was dropped", id)
		default:
		}
	})
}

func TestIDKey(t *testing.T) {
	for _, tc := range []struct{ raw, want string }{
		{`7`, "n7"}, {`7.0`, "n7"}, {` 7 `, "n7"}, {`"7"`, "s7"}, {`null`, ""}, {``, ""}, {`{}`, ""},
	} {
		if got := idKey(json.RawMessage(tc.raw)); got != tc.want {
			t.Errorf("idKey(%q) = %q, want %q", tc.raw, got, tc.want)
		}
	}
}

// readAll reads r through a callReader one byte at a time, as a slow pipe
// would deliver it.
func readAll(t *testing.T, calls *stdioCalls, input string) string {
	t.Helper()
	r := &callReader{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(input))), calls: calls}
	got, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return string(got)
}

func TestStdioCalls(t *testing.T) {
	t.Run("the reader passes bytes through unchanged and sees lines split across reads", func(t *testing.T) {
		calls := &stdioCalls{pending: map[string]bool{}}
		in := `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"x"}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}` + "\n" +
			`{"jsonrpc":"2.0","id":4,"method":"tools/call"}` + "\n"
		if got := readAll(t, calls, in); got != in {
			t.Fatalf("the reader changed the bytes: %q", got)
		}
		if want := map[string]bool{"n3": true, "n4": false}; fmt.Sprint(calls.pending) != fmt.Sprint(want) {
			t.Fatalf("pending calls %v, want %v", calls.pending, want)
		}
	})
	t.Run("the writer drops a cancelled call's response from a batch and keeps the others", func(t *testing.T) {
		calls := &stdioCalls{pending: map[string]bool{"n1": true, "n2": false}}
		var out strings.Builder
		w := &callWriter{WriteCloser: nopWriteCloser{&out}, calls: calls}
		batch := `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n"
		if n, err := w.Write([]byte(batch)); err != nil || n != len(batch) {
			t.Fatalf("Write = %d, %v", n, err)
		}
		if got, want := out.String(), `[{"jsonrpc":"2.0","id":2,"result":{}}]`+"\n"; got != want {
			t.Fatalf("wrote %q, want %q", got, want)
		}
		if len(calls.pending) != 0 {
			t.Fatalf("answered calls are still pending: %v", calls.pending)
		}
	})
	t.Run("the writer passes the server's own requests and notifications", func(t *testing.T) {
		calls := &stdioCalls{pending: map[string]bool{"n1": true}}
		var out strings.Builder
		w := &callWriter{WriteCloser: nopWriteCloser{&out}, calls: calls}
		msgs := `{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{}}` + "\n" +
			`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1}}` + "\n"
		for _, line := range strings.SplitAfter(msgs, "\n") {
			if line == "" {
				continue
			}
			if _, err := w.Write([]byte(line)); err != nil {
				t.Fatal(err)
			}
		}
		if out.String() != msgs {
			t.Fatalf("wrote %q, want %q", out.String(), msgs)
		}
	})
}
