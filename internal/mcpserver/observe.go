package mcpserver

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// ToolCall describes one finished tool call, for the audit log and
// metrics (Deps.OnToolCall). Fields that do not apply to the tool are
// empty.
type ToolCall struct {
	Time     time.Time
	Tool     string
	Duration time.Duration
	Language string
	// CodeSHA256 is the hex SHA-256 of the code run, never the code.
	CodeSHA256  string
	SessionID   string
	ExecutionID string
	RunID       string
	SandboxID   string
	// Status is the run's or execution's status, "ok" for a tool without
	// one that succeeded, or "rejected" when the call failed (Err).
	Status   string
	ExitCode *int
	// Err is the tool error the caller got, if any.
	Err error
}

// ErrorCode returns the engine code of the call's error ("busy",
// "invalid_argument", "quota", ...), or "" when the call succeeded. A
// refusal over a per-principal quota is "quota" whatever error type
// carries it, as long as its message names the quota.
func (c ToolCall) ErrorCode() string {
	if c.Err == nil {
		return ""
	}
	code := engine.CodeOf(c.Err)
	if code == engine.CodeInternal && strings.Contains(c.Err.Error(), "quota") {
		return "quota"
	}
	return code
}

// describeCall fills a ToolCall from a tool's typed input and output.
func (h *handlers) describeCall(tool string, start time.Time, in, out any, err error) ToolCall {
	c := ToolCall{Time: start, Tool: tool, Duration: time.Since(start), Err: err, Status: "ok"}
	if err != nil {
		c.Status = "rejected"
	}
	switch in := in.(type) {
	case engine.Request:
		c.Language, c.SessionID = in.Language, in.SessionID
		sum := sha256.Sum256([]byte(in.Code))
		c.CodeSHA256 = hex.EncodeToString(sum[:])
	case CreateSessionInput:
		c.Language = in.Language
	case SessionRef:
		c.SessionID = in.SessionID
	case WriteFileInput:
		c.SessionID = in.SessionID
	case ReadFileInput:
		c.SessionID = in.SessionID
	case ListFilesInput:
		c.SessionID = in.SessionID
	case ExecutionRef:
		c.ExecutionID = in.ExecutionID
	case GetExecutionInput:
		c.ExecutionID = in.ExecutionID
	}
	if err != nil {
		return c
	}
	describeResult := func(r *engine.Result) {
		c.Language, c.RunID, c.SandboxID, c.Status = r.Language, r.RunID, r.SandboxID, r.Status
		code := r.ExitCode
		c.ExitCode = &code
	}
	switch out := out.(type) {
	case *engine.Result:
		if out != nil {
			describeResult(out)
		}
	case executions.Snapshot:
		c.ExecutionID, c.Language, c.Status = out.ExecutionID, out.Language, out.Status
		if out.Result != nil {
			describeResult(out.Result) // "finished" says less than the run's own status
			if out.Status != "finished" {
				c.Status = out.Status
			}
		}
	case sessions.Info:
		c.SessionID, c.Language, c.SandboxID = out.SessionID, out.Language, out.SandboxID
	}
	if c.SandboxID == "" && c.SessionID != "" && h.sessions != nil {
		c.SandboxID = h.sessions.SandboxOf(c.SessionID)
	}
	return c
}

// observeCall hands a finished call to Deps.OnToolCall.
func (h *handlers) observeCall(ctx context.Context, tool string, start time.Time, in, out any, err error) {
	if h.onCall == nil {
		return
	}
	h.onCall(ctx, h.describeCall(tool, start, in, out, err))
}
