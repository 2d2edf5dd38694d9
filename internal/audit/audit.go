// Package audit writes the audit log: one JSON line per tool call that runs
// code or touches a session's files, saying who did what, with which code
// (its SHA-256, never the code), where it ran and how it ended.
package audit

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
)

// Entry is one audit line: a tool call, or (Event "egress") one connection
// a sandbox made through its egress proxy.
type Entry struct {
	Time        time.Time `json:"time"`
	Event       string    `json:"event,omitempty"`
	Principal   string    `json:"principal"`
	Tool        string    `json:"tool,omitempty"`
	Language    string    `json:"language,omitempty"`
	CodeSHA256  string    `json:"code_sha256,omitempty"`
	SessionID   string    `json:"session_id,omitempty"`
	ExecutionID string    `json:"execution_id,omitempty"`
	RunID       string    `json:"run_id,omitempty"`
	SandboxID   string    `json:"sandbox_id,omitempty"`
	Status      string    `json:"status"`
	ExitCode    *int      `json:"exit_code,omitempty"`
	DurationMs  int64     `json:"duration_ms"`
	// Error is the tool error the caller got, if any.
	Error string `json:"error,omitempty"`
	// Egress is the connection of an "egress" line.
	Egress *egress.Connection `json:"egress,omitempty"`
}

// EventEgress marks the line of an egress connection.
const EventEgress = "egress"

// EventEgressApproval marks the line of a user's answer to approving an
// egress host (Status approved, declined or unavailable; Egress.Host the
// host).
const EventEgressApproval = "egress_approval"

// Audited lists the tools that get an audit line: those that run code or
// touch a session's files, and the ones that stop such work.
var Audited = map[string]bool{
	"run_code": true, "start_execution": true, "cancel_execution": true,
	"create_session": true, "close_session": true, "fork_session": true, "pause_session": true,
	"write_file": true, "read_file": true, "list_files": true,
}

// Log writes audit lines; safe for concurrent use.
type Log struct {
	mu    sync.Mutex
	w     io.Writer
	close func() error
	tail  ring
}

// Open opens the audit log at path: "-" is standard output; a file is
// created if missing and appended to, readable by its owner only.
func Open(path string) (*Log, error) {
	if path == "-" {
		return New(os.Stdout), nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("audit log %s cannot be opened for writing (%v); make its directory %s writable by this user, or choose another path with --audit-log (or audit.path), or \"-\" for standard output", path, err, filepath.Dir(path))
	}
	return &Log{w: f, close: f.Close}, nil
}

// New returns a log writing to w.
func New(w io.Writer) *Log { return &Log{w: w} }

// Write appends one line. An error is returned (for the server's log) but
// never stops the call it describes.
func (l *Log) Write(e Entry) error {
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	l.mu.Lock()
	defer l.mu.Unlock()
	l.tail.add(e)
	_, err = l.w.Write(data)
	return err
}

// Close closes the file, if the log has one.
func (l *Log) Close() error {
	if l.close == nil {
		return nil
	}
	return l.close()
}
