package agentconn

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// maxToolCalls bounds the tool calls of one job answered at once here;
// the broker's own bound (code_mode.max_concurrent_calls) is lower, so
// this one only stops a subverted agent from making goroutines without end.
const maxToolCalls = 64

// toolCalls answers the tool calls (wire.KindToolCall) a job's programs
// send through the agent, each on a goroutine of its own so that output
// frames keep flowing while a call waits for its server. Answers go to the
// agent as wire.KindToolResult frames.
type toolCalls struct {
	ctx    context.Context
	cancel context.CancelFunc
	job    sandbox.Job
	write  func(wire.Frame) error
	slots  chan struct{}
	wg     sync.WaitGroup
}

func newToolCalls(ctx context.Context, job sandbox.Job, write func(wire.Frame) error) *toolCalls {
	ctx, cancel := context.WithCancel(ctx)
	return &toolCalls{ctx: ctx, cancel: cancel, job: job, write: write, slots: make(chan struct{}, maxToolCalls)}
}

// handle answers one call frame; it reports whether the frame was one the
// agent would send.
func (t *toolCalls) handle(payload []byte) bool {
	var call wire.ToolCall
	if err := json.Unmarshal(payload, &call); err != nil {
		return false
	}
	if t.job.Tools == nil {
		t.answer(wire.ToolResult{ID: call.ID, Error: "this run was given no tools: name the MCP servers it may call in tools of run_code, start_execution or create_session"})
		return true
	}
	select {
	case t.slots <- struct{}{}:
	default:
		t.answer(wire.ToolResult{ID: call.ID, Error: fmt.Sprintf("more than %d tool calls at once; wait for some to end", maxToolCalls)})
		return true
	}
	t.wg.Go(func() {
		defer func() { <-t.slots }()
		res := t.job.Tools.CallTool(t.ctx, t.job.RunID, call)
		res.ID = call.ID
		t.answer(res)
	})
	return true
}

// answer sends res to the agent. A result too large for a frame (the
// broker caps them far below) is answered with an error instead.
func (t *toolCalls) answer(res wire.ToolResult) {
	payload, err := json.Marshal(res)
	if err == nil && len(payload) > wire.MaxFrameBytes {
		payload, err = json.Marshal(wire.ToolResult{ID: res.ID, Error: fmt.Sprintf("the result is %d bytes, more than a frame carries", len(payload))})
	}
	if err != nil {
		return
	}
	_ = t.write(wire.Frame{Kind: wire.KindToolResult, Payload: payload})
}

// stop cancels the calls still waiting (the job ended) and waits for them.
func (t *toolCalls) stop() {
	t.cancel()
	t.wg.Wait()
}
