package tasks

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// taskParamKey carries a 2025-11-25 tools/call's params.task past the SDK.
// go-sdk v1.8.0 decodes tools/call params into a struct without a task
// field and drops it, so the transport layer moves it into _meta, which the
// SDK keeps, before the SDK reads the message.
const taskParamKey = "io.mcp-code-runner/task"

// liftTaskParam returns the params of a tools/call with params.task moved
// to params._meta[taskParamKey]; params without a task come back as they
// are.
func liftTaskParam(params json.RawMessage) json.RawMessage {
	if !bytes.Contains(params, []byte(`"task"`)) {
		return params
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(params, &fields) != nil {
		return params
	}
	taskParam, ok := fields["task"]
	if !ok {
		return params
	}
	meta := map[string]json.RawMessage{}
	if raw, ok := fields["_meta"]; ok && json.Unmarshal(raw, &meta) != nil {
		return params // a malformed _meta is the SDK's to reject
	}
	meta[taskParamKey] = taskParam
	delete(fields, "task")
	encodedMeta, err := json.Marshal(meta)
	if err != nil {
		return params
	}
	fields["_meta"] = encodedMeta
	out, err := json.Marshal(fields)
	if err != nil {
		return params
	}
	return out
}

// HTTP is the HTTP side of the Tasks layer. It applies liftTaskParam
// to the body of a POSTed tools/call, and answers a 2026-era tasks/get,
// tasks/update or tasks/cancel whose Mcp-Name header names another task
// than params.taskId with 400 and HeaderMismatch (-32020), as go-sdk does
// for the methods it knows (SEP-2243; SEP-2663 routes tasks by that header).
// It runs after the call linker, which has read the body into memory.
func HTTP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
			return
		}
		if bytes.Contains(body, []byte(`"task`)) {
			var msg map[string]json.RawMessage
			if json.Unmarshal(body, &msg) == nil {
				switch string(msg["method"]) {
				case `"tools/call"`:
					if len(msg["params"]) > 0 {
						msg["params"] = liftTaskParam(msg["params"])
						if out, err := json.Marshal(msg); err == nil {
							body = out
						}
					}
				case `"tasks/get"`, `"tasks/update"`, `"tasks/cancel"`:
					if mismatch := taskNameMismatch(r.Header, msg["params"]); mismatch != "" {
						w.Header().Set("Content-Type", "application/json")
						w.WriteHeader(http.StatusBadRequest)
						_ = json.NewEncoder(w).Encode(map[string]any{"jsonrpc": "2.0", "id": msg["id"],
							"error": map[string]any{"code": mcp.CodeHeaderMismatch, "message": mismatch}})
						return
					}
				}
			}
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.ContentLength = int64(len(body))
		next.ServeHTTP(w, r)
	})
}

// Transport wraps a transport (stdio, in-memory) so that a 2025-11-25
// task-augmented tools/call keeps its params.task on the way to the server.
func Transport(t mcp.Transport) mcp.Transport { return taskTransport{t} }

type taskTransport struct{ mcp.Transport }

func (t taskTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return taskConn{c}, nil
}

type taskConn struct{ mcp.Connection }

func (c taskConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if req, ok := msg.(*jsonrpc.Request); ok && err == nil && req.Method == "tools/call" {
		req.Params = liftTaskParam(req.Params)
	}
	return msg, err
}

// taskNameMismatch describes how a 2026-era task request's Mcp-Name header
// disagrees with its params.taskId, or returns "" when it does not (or the
// header is absent, or the request is of the 2025 era, which has no such
// header).
func taskNameMismatch(h http.Header, params json.RawMessage) string {
	name := h.Get("Mcp-Name")
	if name == "" || h.Get("MCP-Protocol-Version") < "2026-07-28" {
		return ""
	}
	var p struct {
		TaskID string `json:"taskId"`
	}
	_ = json.Unmarshal(params, &p)
	if p.TaskID == name {
		return ""
	}
	return "header mismatch: Mcp-Name header value '" + name + "' does not match params.taskId '" + p.TaskID + "'"
}
