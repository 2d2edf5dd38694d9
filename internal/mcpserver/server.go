// Package mcpserver is the MCP surface of mcp-code-runner: the tools (run_code
// and list_languages; start_execution, get_execution, cancel_execution and
// list_executions for long jobs; create_session, close_session,
// list_sessions, write_file, read_file, list_files, install_packages,
// fork_session and pause_session for sessions), the
// language, output and artifact resources, the prompts, and completion of
// their arguments. [NewServer] builds it on its [Deps] (the engine, the
// executions and the sessions; [New] on an engine alone, [NewBareServer]
// on a [Surface] of the caller's); the transport (stdio or Streamable
// HTTP) is chosen by the caller.
package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/runapp"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// Name is the server's implementation name.
const Name = "mcp-code-runner"

const instructions = `Runs code in fresh, isolated containers: each run_code call gets a new
sandbox with no network, a read-only system, a size-limited writable
/workspace (the working directory) and /tmp, and limits on time, memory,
processes and output. Nothing persists between calls unless you
create_session: then files persist, and for Python and JavaScript so do
variables and imports (pass session_id to run_code). Call list_languages
for the available languages and versions. For jobs longer than a request
may last, start_execution returns at once; poll with get_execution. Programs read stdin, args, env
and input files; results carry exit code, stdout and stderr (truncated
inline past a limit, with the full text available as a resource).`

// Deps are what the MCP surface serves from.
type Deps struct {
	Engine     *engine.Engine
	Executions *executions.Manager
	Sessions   *sessions.Manager
	// OnToolCall, if set, sees every finished tool call (the audit log and
	// metrics); it runs on the call's goroutine before the answer is sent.
	OnToolCall func(context.Context, ToolCall)
	// CodeMode, if set, is the broker of the MCP servers runs' code may
	// call: their signatures are the mcr://apis/ resources.
	CodeMode *codemode.Broker
	// Gate is the engine's and the sessions' network gate: the hosts users
	// approve go to it, and the audit hears of each answer through it.
	// Without it the server makes one of its own from the engine's
	// configuration and state store.
	Gate *gate.Gate
}

// New returns an MCP server backed by eng, with executions and sessions
// managers of its own (for tests and embedding; serve shuts its own down).
func New(eng *engine.Engine, version string, log *slog.Logger) *mcp.Server {
	return NewServer(Deps{Engine: eng, Executions: executions.NewManager(eng), Sessions: sessions.NewManager(eng)}, version, log)
}

// NewServer returns an MCP server on deps.
func NewServer(deps Deps, version string, log *slog.Logger) *mcp.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, st := deps.Engine.Config(), deps.Engine.Store()
	h := &handlers{eng: deps.Engine, execs: deps.Executions, sessions: deps.Sessions, log: log, onCall: deps.OnToolCall,
		codeMode: deps.CodeMode,
		outputs:  outputs.Runs(cfg, st), artifacts: outputs.Artifacts(cfg, st), gate: deps.Gate}
	if h.gate == nil {
		h.gate = gate.New(cfg, deps.Engine.Registry(), gate.Options{Store: st, Logger: log})
	}
	s := NewBareServer(Surface{
		Implementation: &mcp.Implementation{
			Name:    Name,
			Title:   "Code Runner",
			Version: version,
		},
		Instructions:      instructions,
		CompletionHandler: h.complete,
		Capabilities: &mcp.ServerCapabilities{
			Tools:     &mcp.ToolCapabilities{},
			Resources: &mcp.ResourceCapabilities{},
			Prompts:   &mcp.PromptCapabilities{},
		},
		Tasks: tasks.Config{
			Executions: deps.Executions,
			MaxTTL:     time.Duration(deps.Engine.Config().Executions.TaskMaxTTLSeconds) * time.Second,
			MaxKept:    deps.Engine.Config().Executions.MaxKept,
			Prepare:    h.prepareTask,
			Store:      deps.Engine.Store(),
		},
	}, log)
	s.AddReceivingMiddleware(acceptEnvObject)
	addRunTools(s, h)
	tasks.Support(s, "run_code")
	addLanguageTools(s, h)
	addExecutionTools(s, h)
	addSessionTools(s, h)
	addResources(s, h)
	addCodeModeResources(s, h)
	runapp.Register(s)
	addPrompts(s, h)
	return s
}

// Surface describes what a server built by NewBareServer announces: who it
// is, its capabilities, and the handlers of methods that are not tools,
// resources or prompts.
type Surface struct {
	Implementation     *mcp.Implementation
	Instructions       string
	Capabilities       *mcp.ServerCapabilities
	CompletionHandler  func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error)
	SubscribeHandler   func(context.Context, *mcp.SubscribeRequest) error
	UnsubscribeHandler func(context.Context, *mcp.UnsubscribeRequest) error
	// Tasks configures the server's MCP Tasks layer; the tools that run as
	// tasks are named with [tasks.Support].
	Tasks tasks.Config
}

// NewBareServer returns an MCP server with the plumbing every server of this
// MCP layer shares (the SDK's logger, the principal of each request, and
// every receiving middleware the layer adds) and no tools, resources or
// prompts: NewServer adds the product's, and the conformance fixture server
// (internal/conformance) the suite's, so that both are served the same way.
func NewBareServer(sf Surface, log *slog.Logger) *mcp.Server {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := mcp.NewServer(sf.Implementation, &mcp.ServerOptions{
		Instructions: sf.Instructions,
		// The SDK logs every connection at info level: one per HTTP request
		// in stateless mode. Keep its warnings and errors only.
		Logger:             slog.New(minLevel{log.Handler(), slog.LevelWarn}),
		CompletionHandler:  sf.CompletionHandler,
		SubscribeHandler:   sf.SubscribeHandler,
		UnsubscribeHandler: sf.UnsubscribeHandler,
		Capabilities:       tasks.WithExtension(sf.Capabilities),
	})
	// The Tasks layer runs inside [transport.WithPrincipal]: tasks belong to the
	// request's principal.
	tl := tasks.New(s, sf.Tasks, log)
	s.AddReceivingMiddleware(tl.Middleware)
	s.AddReceivingMiddleware(transport.WithPrincipal)
	tl.AddMethods(s)
	return s
}

// handlers carry the dependencies every handler uses.
type handlers struct {
	eng      *engine.Engine
	execs    *executions.Manager
	sessions *sessions.Manager
	log      *slog.Logger
	onCall   func(context.Context, ToolCall)
	codeMode *codemode.Broker
	// outputs and artifacts are what runs kept, read from the state store
	// the engine keeps them in.
	outputs, artifacts *outputs.Store
	// gate keeps the hosts users approved and hears what became of asking
	// them.
	gate *gate.Gate
}

// minLevel drops records below level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (m minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.level && m.Handler.Enabled(ctx, l)
}

// addTool registers a typed tool whose handler cannot crash the server: a
// panic becomes a tool error (and a log line with the stack).
func addTool[In, Out any](s *mcp.Server, h *handlers, t *mcp.Tool, fn mcp.ToolHandlerFor[In, Out]) {
	runapp.Annotate(t)
	// The SDK re-encodes a tool's input schema on every call over HTTP (to
	// find x-mcp-header annotations); given as JSON, it is not encoded from
	// its Go form each time (about 0.15 ms of CPU per run_code call here).
	if schema, ok := t.InputSchema.(*jsonschema.Schema); ok {
		raw, err := json.Marshal(schema)
		if err != nil {
			panic(fmt.Sprintf("%s input schema: %v", t.Name, err))
		}
		t.InputSchema = json.RawMessage(raw)
	}
	// The output schema is the one the SDK would infer from Out, but the
	// handler hands the SDK its result already encoded (structuredContent,
	// and the same JSON as text): the SDK would otherwise encode it, decode
	// it, check it against a schema derived from the very type it was
	// encoded from, and encode it again, on every call.
	if t.OutputSchema == nil {
		rt := reflect.TypeFor[Out]()
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		schema, err := jsonschema.ForType(rt, &jsonschema.ForOptions{})
		if err != nil {
			panic(fmt.Sprintf("%s output schema: %v", t.Name, err))
		}
		t.OutputSchema = schema
	}
	mcp.AddTool(s, t, func(ctx context.Context, req *mcp.CallToolRequest, in In) (res *mcp.CallToolResult, _ any, err error) {
		defer func() {
			if r := recover(); r != nil {
				h.log.Error("tool handler panicked", "tool", t.Name, "panic", r, "stack", string(debug.Stack()))
				res, err = nil, fmt.Errorf("internal error in %s (%v); the server keeps running: please report it", t.Name, r)
			}
		}()
		start := time.Now()
		res, out, err := fn(ctx, req, in)
		h.observeCall(ctx, t.Name, start, in, out, err)
		if err != nil {
			return nil, nil, err
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		// A result that asks the client for input (multi round-trip) carries
		// nothing else.
		if res.StructuredContent == nil && res.InputRequests == nil {
			data, err := encodeOutput(out)
			if err != nil {
				return nil, nil, fmt.Errorf("encoding the result of %s: %w", t.Name, err)
			}
			res.StructuredContent = data
			if res.Content == nil {
				res.Content = []mcp.Content{&mcp.TextContent{Text: string(data)}}
			}
		}
		return res, nil, nil
	})
}

// encodeOutput encodes a tool's output for structuredContent; a nil
// pointer is encoded as its type's zero value, an object, as the SDK does.
func encodeOutput[Out any](out Out) (json.RawMessage, error) {
	var v any = out
	if rv := reflect.ValueOf(out); rv.Kind() == reflect.Pointer && rv.IsNil() {
		v = reflect.Zero(rv.Type().Elem()).Interface()
	}
	return json.Marshal(v)
}
