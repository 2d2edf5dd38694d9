package tasks

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// taskPrefix begins the keys of the tasks' records in the state store.
const taskPrefix = "tasks/"

// taskStoreTimeout bounds a task's store write that no request waits for.
const taskStoreTimeout = 30 * time.Second

// taskRecord is a task in the state store, kept for its TTL from its
// creation.
type taskRecord struct {
	ID        string          `json:"id"`
	Owner     string          `json:"owner"`
	Tool      string          `json:"tool"`
	Execution string          `json:"execution,omitempty"`
	Modern    bool            `json:"modern,omitempty"`
	Status    string          `json:"status"`
	Message   string          `json:"message,omitempty"`
	Created   time.Time       `json:"created"`
	Updated   time.Time       `json:"updated"`
	TTLMs     int64           `json:"ttl_ms"`
	PollMs    int64           `json:"poll_interval_ms"`
	Result    json.RawMessage `json:"result,omitempty"`
	Error     *jsonrpc.Error  `json:"error,omitempty"`
}

func (t *task) recordLocked() taskRecord {
	return taskRecord{ID: t.id, Owner: t.owner, Tool: t.tool, Execution: t.execID, Modern: t.modern, Status: t.status,
		Message: t.message, Created: t.created, Updated: t.updated, TTLMs: t.ttl.Milliseconds(),
		PollMs: taskPollInterval.Milliseconds(), Result: t.result, Error: t.err}
}

// taskFromRecord is a task another server made (or a stopped one left).
func taskFromRecord(r taskRecord) *task {
	t := &task{id: r.ID, owner: r.Owner, tool: r.Tool, execID: r.Execution, modern: r.Modern, created: r.Created,
		ttl: time.Duration(r.TTLMs) * time.Millisecond, done: make(chan struct{}), remote: true,
		updated: r.Updated, status: r.Status, message: r.Message, result: r.Result, err: r.Error,
		cancelled: r.Status == taskCancelled, listeners: map[*taskListener]struct{}{}}
	if r.Status != taskWorking {
		close(t.done)
	}
	return t
}

// save writes t's record: created (durable before the CreateTaskResult
// goes), or updated. A cancellation another server wrote wins over this
// server's later news of the run.
func (tl *Layer) save(ctx context.Context, t *task, create bool) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), taskStoreTimeout)
	defer cancel()
	t.mu.Lock()
	rec := t.recordLocked()
	t.mu.Unlock()
	if create {
		data, err := json.Marshal(rec)
		if err != nil {
			return err
		}
		return tl.st.Create(ctx, taskPrefix+t.id, data, t.ttl)
	}
	return tl.st.Update(ctx, taskPrefix+t.id, 0, func(old []byte) ([]byte, error) {
		var prev taskRecord
		if old == nil || json.Unmarshal(old, &prev) != nil {
			return nil, nil // past its TTL, or forgotten: stays so
		}
		if prev.Status == taskCancelled && rec.Status != taskCancelled {
			rec.Status, rec.Message, rec.Updated = prev.Status, prev.Message, prev.Updated
			t.mu.Lock()
			t.cancelled, t.status, t.message, t.updated = true, prev.Status, prev.Message, prev.Updated
			t.mu.Unlock()
		}
		return json.Marshal(rec)
	})
}

// forget removes a task's record.
func (tl *Layer) forget(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), taskStoreTimeout)
	defer cancel()
	_ = tl.st.Delete(ctx, taskPrefix+id)
}

// load reads a task from the store: nil for none, an error when the store
// did not answer.
func (tl *Layer) load(ctx context.Context, id string) (*task, error) {
	raw, err := tl.st.Get(ctx, taskPrefix+id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "the server's state store did not answer (" + err.Error() + "); try again shortly"}
	}
	var r taskRecord
	if json.Unmarshal(raw, &r) != nil || r.ID != id {
		return nil, nil
	}
	return tl.reconcile(ctx, taskFromRecord(r)), nil
}

// stored returns every task record in the store.
func (tl *Layer) stored(ctx context.Context) []*task {
	entries, err := tl.st.List(ctx, taskPrefix)
	if err != nil {
		tl.log.Warn("listing tasks: the state store did not answer; listing this server's own only", "err", err)
		return nil
	}
	out := make([]*task, 0, len(entries))
	for _, e := range entries {
		var r taskRecord
		if json.Unmarshal(e.Value, &r) == nil {
			out = append(out, taskFromRecord(r))
		}
	}
	return out
}

// reconcile ends a stored task that says working while its execution has
// ended: the server running it stopped (its execution was ended as
// interrupted) before it could write the task's end.
func (tl *Layer) reconcile(ctx context.Context, t *task) *task {
	reader, ok := tl.runner.(executionReader)
	if !ok || t.status != taskWorking || t.execID == "" {
		return t
	}
	s, err := reader.Get(principal.WithContext(ctx, principal.Principal{Name: t.owner}), t.execID, 0, 0, 0)
	var eerr *engine.Error
	gone := errors.As(err, &eerr) && eerr.Code == engine.CodeInvalid
	if err == nil && s.Status == executions.StatusRunning || err != nil && !gone {
		return t
	}
	msg := "the server running the task stopped or restarted while it ran"
	if err == nil && s.Error != "" {
		msg = s.Error
	}
	t.status, t.message, t.updated = taskFailed, msg, time.Now()
	t.err = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
	if err := tl.save(ctx, t, false); err != nil {
		tl.log.Warn("a task a stopped server left was not ended in the state store", "task", t.id, "err", err)
	}
	close(t.done)
	return t
}

// waitRemote waits for another server's task to end, polling the store.
func (tl *Layer) waitRemote(ctx context.Context, t *task) (*task, error) {
	poll := time.NewTicker(taskPollInterval)
	defer poll.Stop()
	for {
		select {
		case <-t.done:
			return t, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-poll.C:
		}
		next, err := tl.load(ctx, t.id)
		if err != nil {
			return nil, err
		}
		if next == nil {
			return nil, invalidParams("tasks/result: task %s passed its ttl and was forgotten while waiting", t.id)
		}
		t = next
	}
}
