package audit

import (
	"encoding/json"
	"time"
)

// EventToolCall marks the line of a tool call that a run's program made
// through the server (code mode).
const EventToolCall = "tool_call"

// ToolCallEntry is the audit line of one tool call a run's program made
// through the server: who, which run, which server and tool, how it ended,
// how long it took and how large its arguments and result were; the
// arguments themselves only when the operator asks (code_mode.audit_arguments).
type ToolCallEntry struct {
	Time        time.Time       `json:"time"`
	Event       string          `json:"event"`
	Principal   string          `json:"principal"`
	RunID       string          `json:"run_id,omitempty"`
	Server      string          `json:"server"`
	Tool        string          `json:"tool"`
	Status      string          `json:"status"`
	DurationMs  int64           `json:"duration_ms"`
	ArgsBytes   int             `json:"arguments_bytes"`
	ResultBytes int             `json:"result_bytes"`
	Arguments   json.RawMessage `json:"arguments,omitempty"`
	Error       string          `json:"error,omitempty"`
}

// WriteToolCall appends the line of one brokered tool call (Event is set
// to EventToolCall).
func (l *Log) WriteToolCall(e ToolCallEntry) error {
	e.Event = EventToolCall
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err = l.w.Write(data)
	return err
}
