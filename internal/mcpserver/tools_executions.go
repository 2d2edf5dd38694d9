package mcpserver

import (
	"context"
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
)

// ExecutionRef names an execution.
type ExecutionRef struct {
	ExecutionID string `json:"execution_id" jsonschema:"the id start_execution returned"`
}

// GetExecutionInput is get_execution's input.
type GetExecutionInput struct {
	ExecutionID  string `json:"execution_id" jsonschema:"the id start_execution returned"`
	WaitSeconds  int    `json:"wait_seconds,omitempty" jsonschema:"wait up to this many seconds for the execution to end before answering (long poll); 0 answers at once"`
	StdoutOffset int64  `json:"stdout_offset,omitempty" jsonschema:"return stdout from this byte on; pass the previous answer's stdout_bytes to get only what is new"`
	StderrOffset int64  `json:"stderr_offset,omitempty" jsonschema:"return stderr from this byte on"`
}

// ExecutionList is list_executions' result.
type ExecutionList struct {
	Executions []executions.Snapshot `json:"executions" jsonschema:"executions kept, newest first, without output"`
}

func addExecutionTools(s *mcp.Server, h *handlers) {
	addTool(s, h, &mcp.Tool{
		InputSchema: requestSchema(),
		Name:        "start_execution",
		Title:       "Start a long-running execution",
		Description: `Start a program like run_code, but return at once with an execution_id instead
of waiting: for jobs longer than a request may last (up to the operator's
maximum duration, which is also the default time limit). Follow it with
get_execution (output so far, status, and the result when done; it can wait
for the end) and stop it with cancel_execution.`,
		Annotations: &mcp.ToolAnnotations{Title: "Start a long-running execution", DestructiveHint: new(false), OpenWorldHint: new(false)},
	}, h.startExecution)
	addTool(s, h, &mcp.Tool{
		Name:        "get_execution",
		Title:       "Get an execution's status and output",
		Description: "Status, output so far and, once ended, the full result of an execution started with start_execution. wait_seconds makes it wait for the end (long poll); stdout_offset/stderr_offset return only output not yet seen.",
		Annotations: &mcp.ToolAnnotations{Title: "Get an execution", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, h.getExecution)
	addTool(s, h, &mcp.Tool{
		Name:        "cancel_execution",
		Title:       "Cancel an execution",
		Description: "Stop a running execution: its sandbox is killed and removed; the output so far is kept and returned.",
		Annotations: &mcp.ToolAnnotations{Title: "Cancel an execution", DestructiveHint: new(true), OpenWorldHint: new(false)},
	}, h.cancelExecution)
	addTool(s, h, &mcp.Tool{
		Name:        "list_executions",
		Title:       "List executions",
		Description: "List your executions running or recently ended, newest first, with status and output sizes (an operator sees everyone's, with their owners).",
		Annotations: &mcp.ToolAnnotations{Title: "List executions", ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)},
	}, h.listExecutions)
}

func (h *handlers) startExecution(ctx context.Context, _ *mcp.CallToolRequest, in engine.Request) (*mcp.CallToolResult, executions.Snapshot, error) {
	if in.SessionID != "" {
		return nil, executions.Snapshot{}, fmt.Errorf("start_execution runs in a fresh sandbox and does not take session_id; use run_code with session_id (progress notifications stream its output)")
	}
	s, err := h.execs.Start(ctx, in)
	if err != nil {
		return nil, s, err
	}
	return executionContent(s, "started; poll it with get_execution"), s, nil
}

func (h *handlers) getExecution(ctx context.Context, _ *mcp.CallToolRequest, in GetExecutionInput) (*mcp.CallToolResult, executions.Snapshot, error) {
	s, err := h.execs.Get(ctx, in.ExecutionID, time.Duration(in.WaitSeconds)*time.Second, in.StdoutOffset, in.StderrOffset)
	if err != nil {
		return nil, s, err
	}
	return executionContent(s, ""), s, nil
}

func (h *handlers) cancelExecution(ctx context.Context, _ *mcp.CallToolRequest, in ExecutionRef) (*mcp.CallToolResult, executions.Snapshot, error) {
	s, err := h.execs.Cancel(ctx, in.ExecutionID)
	if err != nil {
		return nil, s, err
	}
	return executionContent(s, "cancelled; its sandbox is gone"), s, nil
}

func (h *handlers) listExecutions(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ExecutionList, error) {
	out := ExecutionList{Executions: h.execs.List(ctx)}
	return resultContent(out), out, nil
}

func executionContent(s executions.Snapshot, note string) *mcp.CallToolResult {
	res := resultContent(s)
	summary := "execution " + s.ExecutionID + " (" + s.Language + "): " + s.Status
	if s.Result != nil {
		summary += ", " + engine.Summary(s.Result)
	}
	if note != "" {
		summary += "; " + note
	}
	res.Content = append([]mcp.Content{&mcp.TextContent{Text: summary}}, res.Content...)
	return res
}
