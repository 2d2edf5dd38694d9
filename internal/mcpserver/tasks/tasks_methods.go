package tasks

import (
	"context"
	"encoding/json"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskParams are the params of every tasks/* method.
type taskParams struct {
	mcp.ParamsBase
	TaskID         string          `json:"taskId,omitempty"`
	Cursor         string          `json:"cursor,omitempty"`
	InputResponses json.RawMessage `json:"inputResponses,omitempty"`
}

// taskResult is a result whose JSON the Tasks layer writes itself: the
// SDK has no type for it. The SDK may still add _meta (its serverInfo).
type taskResult struct {
	mcp.ResultBase
	fields map[string]any
	meta   mcp.Meta
}

func (r *taskResult) MarshalJSON() ([]byte, error) {
	out := maps.Clone(r.fields)
	if out == nil {
		out = map[string]any{}
	}
	meta := maps.Clone(r.meta)
	if m := r.ResultBase.Meta; len(m) > 0 {
		if meta == nil {
			meta = mcp.Meta{}
		}
		maps.Copy(meta, m)
	}
	if len(meta) > 0 {
		out["_meta"] = meta
	}
	return json.Marshal(out)
}

// ackResult is the 2026-era empty acknowledgement.
func ackResult() *taskResult { return &taskResult{fields: map[string]any{"resultType": "complete"}} }

// AddMethods registers on s tasks/get, tasks/result, tasks/list,
// tasks/cancel and tasks/update, which the SDK does not know.
func (tl *Layer) AddMethods(s *mcp.Server) {
	for method, fn := range map[string]func(context.Context, *mcp.ServerSession, *taskParams, bool) (*taskResult, error){
		"tasks/get":    tl.get,
		"tasks/result": tl.result,
		"tasks/list":   tl.listMethod,
		"tasks/cancel": tl.cancelMethod,
		"tasks/update": tl.update,
	} {
		err := mcp.AddReceivingCustomMethod(s, method, func(ctx context.Context, ss *mcp.ServerSession, p *taskParams) (*taskResult, error) {
			if p == nil {
				p = &taskParams{}
			}
			modern := modernRequest(p.Meta)
			if modern && !declaresTasks(p.Meta) {
				return nil, missingTasksCapability(method)
			}
			return fn(ctx, ss, p, modern)
		})
		if err != nil {
			panic(err) // only a standard method's name fails, which these are not
		}
	}
}

// get answers tasks/get: the task's status; in the 2026 era also its result
// or error once ended.
func (tl *Layer) get(ctx context.Context, _ *mcp.ServerSession, p *taskParams, modern bool) (*taskResult, error) {
	t, err := tl.lookup(ctx, "tasks/get", p.TaskID)
	if err != nil {
		return nil, err
	}
	if modern {
		return &taskResult{fields: t.view().modern("complete", true)}, nil
	}
	return &taskResult{fields: t.view().legacy()}, nil
}

// result answers the 2025-era tasks/result: it waits for the task to end
// (sending its progress meanwhile) and returns exactly what the plain
// tools/call would have: its result, or its JSON-RPC error.
func (tl *Layer) result(ctx context.Context, ss *mcp.ServerSession, p *taskParams, modern bool) (*taskResult, error) {
	if modern {
		return nil, methodNotFound("tasks/result is not part of the 2026-07-28 Tasks extension: tasks/get carries the result once the task has ended")
	}
	t, err := tl.lookup(ctx, "tasks/result", p.TaskID)
	if err != nil {
		return nil, err
	}
	if t.remote {
		// Another server's task: its record says when it ends.
		if t, err = tl.waitRemote(ctx, t); err != nil {
			return nil, err
		}
	} else {
		l := &taskListener{ctx: ctx, session: ss}
		t.mu.Lock()
		t.listeners[l] = struct{}{}
		t.mu.Unlock()
		defer func() {
			t.mu.Lock()
			delete(t.listeners, l)
			t.mu.Unlock()
		}()
		select {
		case <-t.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	v := t.view()
	if v.Err != nil {
		return nil, v.Err
	}
	var fields map[string]any
	if v.Result != nil {
		if err := json.Unmarshal(v.Result, &fields); err != nil {
			return nil, err
		}
	}
	meta, _ := fields["_meta"].(map[string]any)
	delete(fields, "_meta")
	out := &taskResult{fields: fields, meta: mcp.Meta{}}
	maps.Copy(out.meta, meta)
	out.meta[relatedTaskKey] = map[string]any{"taskId": t.id}
	return out, nil
}

// listMethod answers the 2025-era tasks/list: the caller's tasks, newest
// first, in one page.
func (tl *Layer) listMethod(ctx context.Context, _ *mcp.ServerSession, p *taskParams, modern bool) (*taskResult, error) {
	if modern {
		return nil, methodNotFound("tasks/list is not part of the 2026-07-28 Tasks extension")
	}
	if p.Cursor != "" {
		return nil, invalidParams("tasks/list: unknown cursor %q: this server lists all your tasks in one page and never returns a cursor", p.Cursor)
	}
	tasks := tl.list(ctx)
	views := make([]map[string]any, 0, len(tasks))
	for _, t := range tasks {
		views = append(views, t.view().legacy())
	}
	return &taskResult{fields: map[string]any{"tasks": views}}, nil
}

// cancelMethod answers tasks/cancel: the run is stopped and its sandbox
// killed. In the 2026 era the answer is an empty ack, also for a task that
// had ended already; the 2025 era answers the cancelled task, and -32602
// for one that had ended (its specification says so).
func (tl *Layer) cancelMethod(ctx context.Context, _ *mcp.ServerSession, p *taskParams, modern bool) (*taskResult, error) {
	t, err := tl.lookup(ctx, "tasks/cancel", p.TaskID)
	if err != nil {
		return nil, err
	}
	cancelled := tl.cancel(ctx, t)
	if modern {
		return ackResult(), nil
	}
	if !cancelled {
		return nil, invalidParams("tasks/cancel: task %s already ended (status %s); nothing to cancel", t.id, t.view().Status)
	}
	return &taskResult{fields: t.view().legacy()}, nil
}

// update answers the 2026-era tasks/update. This server's tasks never ask
// for input, so there is nothing to deliver: a known task gets the ack.
func (tl *Layer) update(ctx context.Context, _ *mcp.ServerSession, p *taskParams, modern bool) (*taskResult, error) {
	if !modern {
		return nil, methodNotFound("tasks/update is part of the 2026-07-28 Tasks extension, not of 2025-11-25 Tasks")
	}
	if _, err := tl.lookup(ctx, "tasks/update", p.TaskID); err != nil {
		return nil, err
	}
	return ackResult(), nil
}

// toolsWithTaskSupport is tools/list's result with execution.taskSupport
// on the tools that support tasks (the SDK's Tool has no such field). It
// embeds the SDK's result, so the SDK still sets its resultType.
type toolsWithTaskSupport struct {
	*mcp.ListToolsResult
	tl *Layer
}

func (r *toolsWithTaskSupport) MarshalJSON() ([]byte, error) {
	data, err := json.Marshal(r.ListToolsResult)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	var tools []map[string]any
	if err := json.Unmarshal(fields["tools"], &tools); err != nil {
		return nil, err
	}
	for _, t := range tools {
		if name, _ := t["name"].(string); r.tl.supports(name) {
			t["execution"] = map[string]any{"taskSupport": "optional"}
		}
	}
	if fields["tools"], err = json.Marshal(tools); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}

// initializeWithTasks is the initialize result with the 2025-11-25 tasks
// capability, which the SDK's ServerCapabilities has no field for.
type initializeWithTasks struct {
	*mcp.InitializeResult
}

func (r *initializeWithTasks) MarshalJSON() ([]byte, error) {
	data, err := json.Marshal(r.InitializeResult)
	if err != nil {
		return nil, err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	var caps map[string]any
	if err := json.Unmarshal(fields["capabilities"], &caps); err != nil || caps == nil {
		caps = map[string]any{}
	}
	caps["tasks"] = map[string]any{
		"list":     map[string]any{},
		"cancel":   map[string]any{},
		"requests": map[string]any{"tools": map[string]any{"call": map[string]any{}}},
	}
	if fields["capabilities"], err = json.Marshal(caps); err != nil {
		return nil, err
	}
	return json.Marshal(fields)
}
