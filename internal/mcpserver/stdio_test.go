package mcpserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"testing"
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
		// The same id again: a new request, answered.
		p.send(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
		line := p.expect(`"id":1`)
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
