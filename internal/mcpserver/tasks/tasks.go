// Package tasks is the MCP Tasks layer of a server: a client that speaks
// MCP Tasks gets a long run_code as a task instead of learning
// start_execution. Two eras, not wire-compatible, are
// told apart per request:
//
//   - 2025-11-25 (experimental Tasks, initialize handshake): the client asks
//     for a task with params.task on tools/call and gets {task}; it polls
//     tasks/get, blocks on tasks/result for the CallToolResult, lists with
//     tasks/list and stops with tasks/cancel. The server advertises
//     capabilities.tasks in its initialize result.
//   - 2026-07-28 (the io.modelcontextprotocol/tasks extension, SEP-2663):
//     the client declares the extension in the request's
//     _meta.clientCapabilities and the server answers a task-supporting
//     tools/call with resultType "task"; tasks/get carries the result once
//     done; tasks/update and tasks/cancel answer an empty ack. The server
//     advertises the extension in capabilities.extensions.
//
// go-sdk v1.8.0 knows none of it: tools/call is intercepted by a receiving
// middleware, the tasks/* methods are custom methods, and the 2025
// params.task is carried past the SDK by the transport ([Transport], [HTTP]).
//
// A task is an execution (internal/executions) running the tool's own
// handler: one engine for long runs, so a task is also listed by
// list_executions, and Shutdown, quotas and cancellation treat both alike.
//
// Every task is also a record in the state store (Config.Store),
// written before the CreateTaskResult goes and final before tasks/result
// returns: tasks/get, tasks/result, tasks/list and tasks/cancel on any
// server sharing the store, or after a restart, find it by its id. The
// server running a task keeps it in memory as well (its progress
// listeners, its end as a channel).
package tasks

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/progress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

const (
	tasksExtension       = "io.modelcontextprotocol/tasks"
	relatedTaskKey       = "io.modelcontextprotocol/related-task"
	immediateResponseKey = "io.modelcontextprotocol/model-immediate-response"
	// taskPollInterval is the polling interval suggested to clients.
	taskPollInterval = 500 * time.Millisecond
	// taskCancelWait bounds how long tasks/cancel waits for the sandbox to go.
	taskCancelWait = 10 * time.Second
)

// Task statuses (both eras).
const (
	taskWorking   = "working"
	taskCompleted = "completed"
	taskFailed    = "failed"
	taskCancelled = "cancelled"
)

// taskLayers finds the Tasks layer of a server, for Support.
var taskLayers sync.Map // *mcp.Server → *Layer

// Support marks a tool of s, registered on s, as supporting
// task-augmented calls (execution.taskSupport "optional"). run_code is
// marked by mcpserver.NewServer.
func Support(s *mcp.Server, tool string) {
	if tl, ok := taskLayers.Load(s); ok {
		tl.(*Layer).support(tool)
	}
}

// Config configures a server's MCP Tasks layer.
type Config struct {
	// Executions runs the tasks, each an execution; nil runs them on
	// goroutines of the layer's own (the conformance fixtures have no
	// engine).
	Executions *executions.Manager
	// MaxTTL is a task's life from its creation when its client asks for
	// none, and the most it may ask for; 0 means an hour.
	MaxTTL time.Duration
	// MaxKept bounds the tasks kept: past it the oldest ended tasks are
	// forgotten before their TTL; 0 means 1000.
	MaxKept int
	// Prepare checks a call before its task starts, once: the plan names
	// the execution's language and its progress stages, and reaches the
	// tool handler through [Run.Plan] (with the refusal, in [Run.Err]), so
	// that the handler does not resolve the call again. A nil plan and
	// error (a tool without plans, or arguments the tool's own decoding
	// reports) leave the call to the handler: the language as written
	// names the execution, with one stage, "run". nil: never a plan.
	Prepare func(ctx context.Context, req *mcp.CallToolRequest) (*engine.Plan, error)
	// Store keeps the tasks' records; nil keeps them in this process's
	// memory (the conformance fixtures).
	Store store.Store
}

// taskRunner runs a task's work in the background and cancels it.
type taskRunner interface {
	Track(ctx context.Context, language string, stages []string, work executions.Work) (executions.Snapshot, error)
	Cancel(ctx context.Context, id string) (executions.Snapshot, error)
}

// executionReader reads an execution's state: how the Tasks layer learns
// that the server running another's task stopped (its execution ended
// interrupted while the task's record still says working).
type executionReader interface {
	Get(ctx context.Context, id string, wait time.Duration, stdoutOffset, stderrOffset int64) (executions.Snapshot, error)
}

// Layer holds the tasks of one server.
type Layer struct {
	runner taskRunner
	maxTTL time.Duration
	// maxKept bounds the tasks kept: past it the oldest ended tasks are
	// forgotten before their TTL.
	maxKept int
	prepare func(ctx context.Context, req *mcp.CallToolRequest) (*engine.Plan, error)
	log     *slog.Logger
	st      store.Store

	mu    sync.Mutex
	tools map[string]bool // tools that support tasks
	tasks map[string]*task
}

// New returns the Tasks layer of s. The server serves it once it adds
// [Layer.Middleware] as a receiving middleware (inside the one that sets
// the request's principal: tasks belong to it) and [Layer.AddMethods].
func New(s *mcp.Server, cfg Config, log *slog.Logger) *Layer {
	tl := &Layer{
		runner:  goroutineRunner{runs: &sync.Map{}},
		maxTTL:  cfg.MaxTTL,
		maxKept: cfg.MaxKept,
		prepare: cfg.Prepare,
		log:     log,
		tools:   map[string]bool{},
		tasks:   map[string]*task{},
		st:      cfg.Store,
	}
	if tl.st == nil {
		tl.st = store.NewMemory()
	}
	if cfg.Executions != nil {
		tl.runner = cfg.Executions
	}
	if tl.maxTTL <= 0 {
		tl.maxTTL = time.Hour
	}
	if tl.maxKept <= 0 {
		tl.maxKept = 1000
	}
	taskLayers.Store(s, tl)
	return tl
}

// WithExtension returns caps with the 2026-07-28 Tasks extension
// (SEP-2663) advertised; the 2025-11-25 tasks capability, which the SDK's
// ServerCapabilities has no field for, is added to the initialize result by
// the Tasks layer.
func WithExtension(caps *mcp.ServerCapabilities) *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{}
	if caps != nil {
		c := *caps
		out = &c
	}
	out.Extensions = maps.Clone(out.Extensions)
	if out.Extensions == nil {
		out.Extensions = map[string]any{}
	}
	out.Extensions[tasksExtension] = map[string]any{}
	return out
}

// goroutineRunner runs tasks on goroutines, for servers without an
// executions manager.
type goroutineRunner struct {
	runs *sync.Map // id → *goroutineRun
}

type goroutineRun struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func (g goroutineRunner) Track(ctx context.Context, _ string, _ []string, work executions.Work) (executions.Snapshot, error) {
	id := newTaskID()
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	run := &goroutineRun{cancel: cancel, done: make(chan struct{})}
	g.runs.Store(id, run)
	go func() {
		defer g.runs.Delete(id)
		defer close(run.done)
		defer cancel()
		_, _ = work(runCtx, func(sandbox.Chunk) {})
	}()
	return executions.Snapshot{ExecutionID: id, Status: executions.StatusRunning}, nil
}

func (g goroutineRunner) Cancel(ctx context.Context, id string) (executions.Snapshot, error) {
	v, ok := g.runs.Load(id)
	if !ok {
		return executions.Snapshot{}, fmt.Errorf("run %s ended already", id)
	}
	run := v.(*goroutineRun)
	run.cancel()
	select {
	case <-run.done:
	case <-ctx.Done():
	}
	return executions.Snapshot{ExecutionID: id, Status: executions.StatusCancelled}, nil
}

func (tl *Layer) support(tool string) {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	tl.tools[tool] = true
}

func (tl *Layer) supports(tool string) bool {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	return tl.tools[tool]
}

// task is one task-augmented tool call.
type task struct {
	id      string
	owner   string
	tool    string
	execID  string
	modern  bool // made by a 2026-07-28 request
	created time.Time
	ttl     time.Duration
	done    chan struct{}

	// remote is a task read from the store: another server's, or one a
	// stopped server left; it has no listeners and its done is closed
	// only when it has ended.
	remote bool

	mu        sync.Mutex
	expiry    *time.Timer
	updated   time.Time
	status    string
	message   string
	result    json.RawMessage // the CallToolResult, once completed
	err       *jsonrpc.Error  // the call's protocol error, once failed
	cancelled bool
	// session receives the progress of a 2025-era task made over a
	// long-lived connection (stdio); over stateless HTTP the original
	// request is answered at once, so progress goes to the callers
	// blocked in tasks/result instead.
	session   *mcp.ServerSession
	listeners map[*taskListener]struct{}
}

// taskListener is a tasks/result call waiting for its task, which receives
// the task's progress notifications meanwhile.
type taskListener struct {
	ctx     context.Context
	session *mcp.ServerSession
}

// modernRequest tells the protocol era of a request as the SDK does: a
// 2026-07-28 request carries its protocol version in _meta.
func modernRequest(meta mcp.Meta) bool {
	v, ok := meta[mcp.MetaKeyProtocolVersion].(string)
	return ok && v >= "2026-07-28"
}

// declaresTasks reports whether a 2026-era request declares the Tasks
// extension in its per-request client capabilities.
func declaresTasks(meta mcp.Meta) bool {
	caps, ok := meta[mcp.MetaKeyClientCapabilities].(map[string]any)
	if !ok {
		return false
	}
	ext, ok := caps["extensions"].(map[string]any)
	if !ok {
		return false
	}
	_, ok = ext[tasksExtension]
	return ok
}

// methodNotFound is -32601. go-sdk v1.8.0 sends every -32601 as "method
// not found: METHOD", so the message here serves the logs only.
func methodNotFound(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: fmt.Sprintf(format, args...)}
}

// missingTasksCapability is the 2026-era answer to a Tasks method from a
// request that does not declare the extension.
func missingTasksCapability(method string) error {
	data, _ := json.Marshal(mcp.MissingRequiredClientCapabilityData{
		RequiredCapabilities: &mcp.ClientCapabilities{Extensions: map[string]any{tasksExtension: map[string]any{}}},
	})
	return &jsonrpc.Error{Code: mcp.CodeMissingRequiredClientCapabilities,
		Message: method + " needs the " + tasksExtension + " extension: declare it in _meta[\"" + mcp.MetaKeyClientCapabilities + "\"].extensions",
		Data:    data}
}

// Middleware intercepts the methods the SDK serves without knowing Tasks:
// a task-augmented tools/call becomes a task; tools/list marks the tools
// that support tasks; initialize advertises the 2025-era capability.
func (tl *Layer) Middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/call":
			if call, ok := req.(*mcp.CallToolRequest); ok && call.Params != nil {
				return tl.callTool(ctx, next, call)
			}
		case "tools/list":
			res, err := next(ctx, method, req)
			if list, ok := res.(*mcp.ListToolsResult); ok && err == nil {
				return &toolsWithTaskSupport{ListToolsResult: list, tl: tl}, nil
			}
			return res, err
		case "initialize":
			res, err := next(ctx, method, req)
			if init, ok := res.(*mcp.InitializeResult); ok && err == nil {
				return &initializeWithTasks{InitializeResult: init}, nil
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// callTool answers a tools/call: a task when the request asks for one (2025)
// or declares the extension (2026) and the tool supports tasks; otherwise
// the plain call.
func (tl *Layer) callTool(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest) (mcp.Result, error) {
	meta := req.Params.Meta
	modern := modernRequest(meta)
	if modern {
		// The server decides; a 2025 params.task in a 2026 request is
		// ignored.
		if !declaresTasks(meta) || !tl.supports(req.Params.Name) {
			return next(ctx, "tools/call", withoutTaskParam(req))
		}
		return tl.start(ctx, next, req, true, tl.maxTTL)
	}
	raw, asked := meta[taskParamKey]
	if !asked {
		return next(ctx, "tools/call", req)
	}
	if !tl.supports(req.Params.Name) {
		// The specification suggests -32601, but go-sdk v1.8.0 replaces the
		// message of every -32601 with "method not found"; -32602 keeps
		// the explanation.
		return nil, invalidParams("tool %q does not support task-augmented calls (it has no execution.taskSupport in tools/list): call it without params.task", req.Params.Name)
	}
	ttl, err := tl.requestedTTL(raw)
	if err != nil {
		return nil, err
	}
	return tl.start(ctx, next, req, false, ttl)
}

// requestedTTL reads a 2025 params.task: its ttl in milliseconds, at most
// the operator's maximum, which is also the TTL when none is asked.
func (tl *Layer) requestedTTL(raw any) (time.Duration, error) {
	maxMs := tl.maxTTL.Milliseconds()
	fields, ok := raw.(map[string]any)
	if !ok {
		return 0, invalidParams("params.task must be an object such as {\"ttl\": 60000}; got %v", raw)
	}
	v, ok := fields["ttl"]
	if !ok || v == nil {
		return tl.maxTTL, nil
	}
	ms, ok := v.(float64)
	if !ok || ms != float64(int64(ms)) || ms <= 0 {
		return 0, invalidParams("params.task.ttl must be a positive whole number of milliseconds; got %v", v)
	}
	if int64(ms) > maxMs {
		return 0, invalidParams("params.task.ttl %d ms is above this server's maximum of %d ms (executions.task_max_ttl_seconds); ask for at most that, or omit ttl to get it", int64(ms), maxMs)
	}
	return time.Duration(ms) * time.Millisecond, nil
}

// withoutTaskParam returns req without the lifted 2025 params.task.
func withoutTaskParam(req *mcp.CallToolRequest) *mcp.CallToolRequest {
	if _, ok := req.Params.Meta[taskParamKey]; !ok {
		return req
	}
	params := *req.Params
	params.Meta = maps.Clone(params.Meta)
	delete(params.Meta, taskParamKey)
	return &mcp.CallToolRequest{Session: req.Session, Params: &params, Extra: req.Extra}
}

// Run is what the tool handler of a task reports to it, through its
// context: the output as it comes, and the engine's result.
type Run struct {
	// OnChunk receives the run's output as it comes.
	OnChunk func(sandbox.Chunk)
	// Result is set by the tool handler to the engine's result.
	Result *engine.Result
	// Plan is the call as [Config.Prepare] checked it, for the handler to
	// run; Err is its refusal, for the handler to answer. Both nil: the
	// handler checks the call itself.
	Plan *engine.Plan
	Err  error
}

type runKey struct{}

// RunFrom returns the task a tool handler runs for, or nil.
func RunFrom(ctx context.Context) *Run {
	tr, _ := ctx.Value(runKey{}).(*Run)
	return tr
}

// names are the language and stages of the run's execution: its plan's,
// or without one the language as the call writes it (the tool's name
// when it writes none) and one stage, "run".
func (r *Run) names(req *mcp.CallToolRequest) (language string, stages []string) {
	if r.Plan != nil {
		return r.Plan.Language.Name, r.Plan.Stages()
	}
	var args struct {
		Language string `json:"language"`
	}
	_ = json.Unmarshal(req.Params.Arguments, &args)
	if args.Language == "" {
		return req.Params.Name, []string{"run"}
	}
	return args.Language, []string{"run"}
}

// start makes the task and runs the call in the background, as an
// execution; the task exists (tasks/get finds it) before the answer goes.
func (tl *Layer) start(ctx context.Context, next mcp.MethodHandler, req *mcp.CallToolRequest, modern bool, ttl time.Duration) (mcp.Result, error) {
	owner := principal.FromContext(ctx).Name
	now := time.Now()
	t := &task{
		id: newTaskID(), owner: owner, tool: req.Params.Name, modern: modern, created: now, ttl: ttl,
		done: make(chan struct{}), updated: now, status: taskWorking, listeners: map[*taskListener]struct{}{},
	}
	call, token := runRequest(req)
	planned := &Run{}
	if tl.prepare != nil {
		planned.Plan, planned.Err = tl.prepare(ctx, call)
	}
	language, stages := planned.names(req)
	var streamer *progress.Streamer
	if token != nil && !modern {
		if req.Extra == nil || req.Extra.Header == nil {
			t.session = req.Session // a long-lived connection: stdio
		}
		streamer = progress.Notifying(token, stages, t.notifyProgress)
	}
	work := func(runCtx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		tr := &Run{OnChunk: onChunk, Plan: planned.Plan, Err: planned.Err}
		if streamer != nil {
			tr.OnChunk = func(c sandbox.Chunk) {
				onChunk(c)
				streamer.OnChunk(c)
			}
			defer streamer.Close()
		}
		res, err := next(context.WithValue(runCtx, runKey{}, tr), "tools/call", call)
		callRes, _ := res.(*mcp.CallToolResult)
		if err == nil && callRes == nil {
			err = fmt.Errorf("tool %s returned no result", t.tool)
		}
		t.finish(callRes, err, tl)
		if err != nil {
			return tr.Result, err
		}
		return tr.Result, nil
	}
	// Registered before the execution starts, so that a tasks/get right
	// after the answer finds it, and the run can never finish unseen.
	if err := tl.save(ctx, t, true); err != nil {
		return toolError(fmt.Errorf("the task could not be recorded: the server's state store did not answer (%v); try again shortly", err)), nil
	}
	tl.mu.Lock()
	tl.pruneLocked()
	tl.tasks[t.id] = t
	tl.mu.Unlock()
	snap, err := tl.runner.Track(ctx, language, stages, work)
	if err != nil {
		tl.mu.Lock()
		delete(tl.tasks, t.id)
		tl.mu.Unlock()
		tl.forget(t.id)
		// Over quota (or another refusal): the answer a plain call gets.
		return toolError(err), nil
	}
	// The expiry starts once the execution is known, so that it can always
	// cancel it.
	t.mu.Lock()
	t.execID = snap.ExecutionID
	t.expiry = time.AfterFunc(ttl, func() { tl.expire(t) })
	t.mu.Unlock()
	if err := tl.save(ctx, t, false); err != nil {
		tl.log.Warn("a task's execution id was not written to the state store", "task", t.id, "err", err)
	}
	tl.log.Debug("task created", "task", t.id, "execution", snap.ExecutionID, "tool", t.tool, "owner", owner, "ttl", ttl)
	return t.createdAnswer(modern), nil
}

// runRequest is the request the task's run gets, and the progress token
// req carried: the run's own request has neither the 2025 params.task nor
// the progress token, since the task streams progress itself (2025 era;
// the 2026 extension has no progress for tasks).
func runRequest(req *mcp.CallToolRequest) (*mcp.CallToolRequest, any) {
	call := withoutTaskParam(req)
	params := *call.Params
	params.Meta = maps.Clone(params.Meta)
	token := params.GetProgressToken()
	delete(params.Meta, "progressToken")
	return &mcp.CallToolRequest{Session: call.Session, Params: &params, Extra: call.Extra}, token
}

// createdAnswer is the answer to the call that created t, in its era's form.
func (t *task) createdAnswer(modern bool) *taskResult {
	view := t.view()
	if modern {
		return &taskResult{fields: view.modern("task", false)}
	}
	return &taskResult{
		fields: map[string]any{"task": view.legacy()},
		meta: mcp.Meta{immediateResponseKey: "Started " + t.tool + " as task " + t.id +
			"; its result comes with tasks/result (or poll tasks/get)."},
	}
}

// toolError is a plain tool error result.
func toolError(err error) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: err.Error()}}}
}

// finish records the call's outcome, in the store before anyone waiting is
// told; a cancelled task stays cancelled.
func (t *task) finish(res *mcp.CallToolResult, err error, tl *Layer) {
	t.mu.Lock()
	if res != nil {
		if data, merr := json.Marshal(res); merr == nil {
			t.result = data
		} else if err == nil {
			err = fmt.Errorf("the tool's result could not be encoded: %w", merr)
		}
	}
	if err != nil {
		t.err = rpcError(err)
	}
	if !t.cancelled {
		t.updated = time.Now()
		switch {
		case err != nil:
			t.status, t.message = taskFailed, err.Error()
		case res.IsError && !t.modern:
			// 2025-11-25: a tool result with isError fails the task; the
			// 2026 extension keeps "failed" for protocol errors.
			t.status, t.message = taskFailed, "the tool reported an error; tasks/result returns it"
		default:
			t.status, t.message = taskCompleted, ""
		}
	}
	t.mu.Unlock()
	if serr := tl.save(context.Background(), t, false); serr != nil {
		tl.log.Error("a task's end was not written to the state store: only this server knows it", "task", t.id, "err", serr)
	}
	close(t.done)
}

// notifyProgress sends a progress notification of the task to its
// connection (stdio) or to the tasks/result calls waiting on it.
func (t *task) notifyProgress(_ context.Context, p *mcp.ProgressNotificationParams) error {
	t.mu.Lock()
	session := t.session
	listeners := make([]*taskListener, 0, len(t.listeners))
	for l := range t.listeners {
		listeners = append(listeners, l)
	}
	t.mu.Unlock()
	p.Meta = maps.Clone(p.Meta)
	if p.Meta == nil {
		p.Meta = mcp.Meta{}
	}
	p.Meta[relatedTaskKey] = map[string]any{"taskId": t.id}
	if session != nil {
		return session.NotifyProgress(context.Background(), p)
	}
	for _, l := range listeners {
		if l.ctx.Err() == nil {
			_ = l.session.NotifyProgress(l.ctx, p)
		}
	}
	return nil
}

// taskView is a task as seen at one moment.
type taskView struct {
	ID, Status, Message string
	Created, Updated    time.Time
	TTL                 time.Duration
	Result              json.RawMessage
	Err                 *jsonrpc.Error
}

func (t *task) view() taskView {
	t.mu.Lock()
	defer t.mu.Unlock()
	return taskView{ID: t.id, Status: t.status, Message: t.message, Created: t.created, Updated: t.updated, TTL: t.ttl, Result: t.result, Err: t.err}
}

func (v taskView) terminal() bool { return v.Status != taskWorking }

const isoMillis = "2006-01-02T15:04:05.000Z07:00"

// legacy is the 2025-11-25 Task object.
func (v taskView) legacy() map[string]any {
	out := map[string]any{
		"taskId":        v.ID,
		"status":        v.Status,
		"createdAt":     v.Created.UTC().Format(isoMillis),
		"lastUpdatedAt": v.Updated.UTC().Format(isoMillis),
		"ttl":           v.TTL.Milliseconds(),
	}
	if !v.terminal() {
		out["pollInterval"] = taskPollInterval.Milliseconds()
	}
	if v.Message != "" {
		out["statusMessage"] = v.Message
	}
	return out
}

// modern is the 2026-07-28 task: resultType "task" when it answers the
// tools/call, "complete" for tasks/get, which also inlines the result or
// the error once ended (detailed).
func (v taskView) modern(resultType string, detailed bool) map[string]any {
	out := map[string]any{
		"resultType":     resultType,
		"taskId":         v.ID,
		"status":         v.Status,
		"createdAt":      v.Created.UTC().Format(isoMillis),
		"lastUpdatedAt":  v.Updated.UTC().Format(isoMillis),
		"ttlMs":          v.TTL.Milliseconds(),
		"pollIntervalMs": taskPollInterval.Milliseconds(),
	}
	if v.Message != "" {
		out["statusMessage"] = v.Message
	}
	if detailed {
		switch v.Status {
		case taskCompleted:
			out["result"] = v.Result
		case taskFailed:
			if v.Err != nil {
				out["error"] = v.Err
			} else {
				out["error"] = rpcError(nil)
			}
		}
	}
	return out
}

// rpcError is err as a JSON-RPC error object.
func rpcError(err error) *jsonrpc.Error {
	if werr, ok := errors.AsType[*jsonrpc.Error](err); ok {
		return werr
	}
	msg := "internal error"
	if err != nil {
		msg = err.Error()
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: msg}
}

// lookup finds a task of ctx's principal; anyone else's, an expired one and
// one that never existed get the same answer.
func (tl *Layer) lookup(ctx context.Context, method, id string) (*task, error) {
	if id == "" {
		return nil, invalidParams("%s needs params.taskId, the id the task-augmented tools/call returned", method)
	}
	tl.mu.Lock()
	t, ok := tl.tasks[id]
	tl.mu.Unlock()
	if !ok {
		var err error
		if t, err = tl.load(ctx, id); err != nil {
			return nil, err
		}
		ok = t != nil
	}
	if !ok || !principal.FromContext(ctx).Uses(t.owner) {
		return nil, invalidParams("%s: unknown task id %q: it never existed, belongs to another client, or passed its ttl (at most %ds) and was forgotten",
			method, id, int(tl.maxTTL.Seconds()))
	}
	return t, nil
}

// pruneLocked forgets the oldest ended tasks while maxKept or more are
// kept, so that a client cannot fill the server's memory with results
// within their TTL. Running tasks are bounded by the executions' quotas.
func (tl *Layer) pruneLocked() {
	if len(tl.tasks) < tl.maxKept {
		return
	}
	var ended []*task
	for _, t := range tl.tasks {
		select {
		case <-t.done:
			ended = append(ended, t)
		default:
		}
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].created.Before(ended[j].created) })
	for _, t := range ended[:min(len(ended), len(tl.tasks)-tl.maxKept+1)] {
		delete(tl.tasks, t.id)
		tl.forget(t.id)
		t.mu.Lock()
		if t.expiry != nil {
			t.expiry.Stop()
		}
		t.mu.Unlock()
	}
}

// expire forgets a task at its TTL; a run still going is cancelled, so
// that nothing is left running for a task nobody can reach.
func (tl *Layer) expire(t *task) {
	tl.mu.Lock()
	delete(tl.tasks, t.id)
	tl.mu.Unlock()
	select {
	case <-t.done:
		return
	default:
	}
	t.mu.Lock()
	t.cancelled, t.status, t.message, t.updated = true, taskCancelled, "the task passed its ttl while running", time.Now()
	execID := t.execID
	t.mu.Unlock()
	tl.forget(t.id)
	tl.log.Info("task expired while running; cancelling it", "task", t.id, "execution", execID, "owner", t.owner)
	ctx := principal.WithContext(context.Background(), principal.Principal{Name: t.owner})
	_, _ = tl.runner.Cancel(ctx, execID)
}

// cancel stops a task's run and waits, briefly, for its sandbox to go. It
// reports whether the task was still running.
func (tl *Layer) cancel(ctx context.Context, t *task) bool {
	select {
	case <-t.done:
		return false
	default:
	}
	t.mu.Lock()
	if t.status != taskWorking {
		t.mu.Unlock()
		return false
	}
	t.cancelled, t.status, t.message, t.updated = true, taskCancelled, "the task was cancelled by request", time.Now()
	execID := t.execID
	t.mu.Unlock()
	if err := tl.save(ctx, t, false); err != nil {
		tl.log.Warn("a task's cancellation was not written to the state store", "task", t.id, "err", err)
	}
	// executions.Cancel kills the sandbox and waits for the run to end.
	waitCtx, stop := context.WithTimeout(context.WithoutCancel(ctx), taskCancelWait)
	defer stop()
	_, _ = tl.runner.Cancel(waitCtx, execID)
	return true
}

// list returns ctx's principal's tasks, newest first: the store's, with
// this server's own in their place.
func (tl *Layer) list(ctx context.Context) []*task {
	p := principal.FromContext(ctx)
	tl.mu.Lock()
	out := make([]*task, 0, len(tl.tasks))
	local := map[string]bool{}
	for _, t := range tl.tasks {
		local[t.id] = true
		if p.Uses(t.owner) {
			out = append(out, t)
		}
	}
	tl.mu.Unlock()
	for _, t := range tl.stored(ctx) {
		if !local[t.id] && p.Uses(t.owner) {
			out = append(out, tl.reconcile(ctx, t))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].created.After(out[j].created) })
	return out
}

func newTaskID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return "task-" + hex.EncodeToString(b[:])
}

// invalidParams is the JSON-RPC error for bad task parameters (-32602).
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}
