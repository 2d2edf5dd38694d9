//go:build !fast

package mcpserver_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func TestProgressStreamsOutput(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	var mu sync.Mutex
	var got []*mcp.ProgressNotificationParams
	var arrival []time.Time
	ctx := context.Background()
	server := mcpserver.New(eng, "test", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	client := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			got = append(got, req.Params)
			arrival = append(arrival, time.Now())
		},
	})
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	start := time.Now()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Meta:      mcp.Meta{"progressToken": "tok-1"},
		Name:      "run_code",
		Arguments: map[string]any{"language": "bash", "code": `for i in 1 2 3 4; do echo "tick $i"; sleep 1; done; echo oops >&2`},
	})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	done := time.Now()
	// The server sends the last notification before its answer, but the
	// client runs its notification handlers on a goroutine of their own
	// (go-sdk's jsonrpc2 queue), apart from the answer: the last one may
	// run after CallTool has returned, so the test waits for the stream's
	// end (the stderr line, sent last) before reading it.
	const want = "tick 1\ntick 2\ntick 3\ntick 4\n[stderr] oops\n"
	testutil.WaitFor(10*time.Second, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(got) > 0 && strings.HasSuffix(got[len(got)-1].Message, "[stderr] oops\n")
	})
	mu.Lock()
	defer mu.Unlock()
	if len(got) < 3 {
		t.Fatalf("got %d progress notifications, want one per tick or so", len(got))
	}
	var all strings.Builder
	last := 0.0
	for i, p := range got {
		if p.ProgressToken != "tok-1" || p.Progress <= last {
			t.Errorf("notification %d: token %v progress %v after %v", i, p.ProgressToken, p.Progress, last)
		}
		last = p.Progress
		all.WriteString(p.Message)
	}
	if all.String() != want {
		t.Errorf("streamed %q, want %q", all.String(), want)
	}
	// Streamed, the notifications arrive as paced as the program printed
	// them (at least 3 s between tick 1 and the last, whatever the delay
	// of each); sent at the end, they would arrive together. The sandbox's
	// start-up, slow on a loaded host, is not part of this.
	if spread := arrival[len(arrival)-1].Sub(arrival[0]); spread < time.Second {
		t.Errorf("the notifications arrived within %s of each other, at %s..%s of a %s call: not streamed",
			spread, arrival[0].Sub(start), arrival[len(arrival)-1].Sub(start), done.Sub(start))
	}
}

func TestCancelKillsContainer(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// Cancelled once the run's first output shows it running.
	cs := connectWith(t, eng, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) { cancel() },
	})
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: mcp.Meta{"progressToken": "tok"}, Name: "run_code",
		Arguments: map[string]any{"language": "bash", "code": "echo started; sleep 60"}})
	if err == nil {
		t.Fatal("a cancelled call returned a result")
	}
	// The server gets notifications/cancelled; its container must go.
	testutil.Eventually(t, 10*time.Second, func() bool { return len(eng.Inflight()) == 0 }, "the cancelled run to end")
	testutil.NoLeftovers(t, b.Client())
}
