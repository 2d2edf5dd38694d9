package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/progress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// requestSchema is the input schema of the tools that take an
// engine.Request, with env advertised as a list of name/value pairs: strict
// schema conversions (the OpenAI Agents SDK's) refuse an open name-to-value
// object. The object form is still accepted (acceptEnvObject).
func requestSchema() *jsonschema.Schema {
	env, err := jsonschema.For[[]engine.EnvVar](nil)
	if err != nil {
		panic(fmt.Sprintf("env schema: %v", err))
	}
	in, err := jsonschema.For[engine.Request](&jsonschema.ForOptions{
		TypeSchemas: map[reflect.Type]*jsonschema.Schema{reflect.TypeFor[engine.Env](): env},
	})
	if err != nil {
		panic(fmt.Sprintf("request input schema: %v", err))
	}
	return in
}

// RunCodeTool describes run_code; lim sets the bounds its schema states.
func RunCodeTool(lim config.Limits) *mcp.Tool {
	in := requestSchema()
	minTimeout, maxTimeout := 1.0, float64(lim.MaxTimeoutSeconds)
	in.Properties["timeout_seconds"].Minimum = &minTimeout
	in.Properties["timeout_seconds"].Maximum = &maxTimeout
	maxCode := lim.MaxCodeBytes
	in.Properties["code"].MaxLength = &maxCode
	in.Properties["files"].MaxItems = &lim.MaxFiles
	in.Properties["env"].MaxItems = &lim.MaxEnv
	in.Properties["files"].Items.Properties["encoding"].Enum = []any{"text", "base64"}
	in.Properties["network"].Enum = []any{"none", "packages", "allowlist"}
	return &mcp.Tool{
		InputSchema: in,
		Name:        "run_code",
		Title:       "Run code in a sandbox",
		Description: `Run a program in a fresh, isolated container and return its exit code,
stdout and stderr. Each call gets a new sandbox: no network (unless network
asks for a tier the operator allows), nothing kept between calls. packages
installs packages first (pip for Python, npm for JavaScript), cached on the
server; the result lists what was installed, and network.denied any host
the egress proxy refused. The code is saved in the working directory (/workspace)
under the language's file name; files adds more files there, stdin, args
and env are given to the program. Compiled languages report a separate
compile stage; a program that does not compile is not run, except that
TypeScript's type errors are counted in type_errors and the program runs.
Entry points are found as written (Java's public class Solution, Kotlin's
fun main, Erlang's main/0, Clojure's -main). Output past the inline limit
is truncated with the full text at stdout_uri/stderr_uri.`,
		Annotations: &mcp.ToolAnnotations{
			Title:           "Run code in a sandbox",
			ReadOnlyHint:    false,
			DestructiveHint: new(false),
			IdempotentHint:  false,
			OpenWorldHint:   new(false),
		},
	}
}

func addRunTools(s *mcp.Server, h *handlers) {
	addTool(s, h, RunCodeTool(h.eng.Config().Limits), h.runCode)
}

func (h *handlers) runCode(ctx context.Context, req *mcp.CallToolRequest, args engine.Request) (*mcp.CallToolResult, *engine.Result, error) {
	run, plan, err := h.prepare(ctx, args)
	if err != nil {
		return nil, nil, err
	}
	tr := tasks.RunFrom(ctx)
	round := h.toolRound(ctx, req, plan, tr != nil)
	if round != nil {
		ctx = codemode.WithRound(ctx, round)
	} else {
		ctx = withToolApprover(ctx, req)
	}
	opts := engine.RunOptions{}
	if ps := progress.ForRequest(ctx, req, plan.Stages()); ps != nil {
		opts.OnChunk = ps.OnChunk
		opts.OnImage = ps.Status
		defer ps.Close()
	}
	// As a task, the run reports its output and result to the task's
	// execution.
	if tr != nil {
		if own := opts.OnChunk; own != nil {
			opts.OnChunk = func(c sandbox.Chunk) { own(c); tr.OnChunk(c) }
		} else {
			opts.OnChunk = tr.OnChunk
		}
	}
	// A call retried with its user's answers (2026-07-28) records the
	// approvals before it runs again.
	var note *mcp.TextContent
	if approved := h.takeApprovals(ctx, req); len(approved) > 0 {
		note = approvalNote(approved, h.gate.Approvals().TTL())
	}
	res, err := run(ctx, plan, opts)
	if tr != nil {
		tr.Result = res
	}
	if err != nil {
		return nil, nil, err
	}
	// A one-shot run denied hosts the operator lets the user approve: ask,
	// and run the same plan once more (its proxy reads approvals as it
	// connects). In the 2026-07-28 era the result asks, and the client
	// calls again with the answers. A task has no one to ask inline, and a
	// session's cell is not run twice (its state would see it twice): an
	// approval given elsewhere reaches its next call.
	if tr == nil && !plan.Session && askedInResult(req) {
		if questions, state := h.approvalRequests(ctx, req, res); questions != nil {
			return &mcp.CallToolResult{InputRequests: questions, RequestState: state}, nil, nil
		}
		if questions := toolApprovalRequests(ctx, req, round); questions != nil {
			return &mcp.CallToolResult{InputRequests: questions, RequestState: round.State()}, nil, nil
		}
	} else if tr == nil && !plan.Session {
		if approved := h.askApprovals(ctx, req, res); len(approved) > 0 {
			if res, err = run(ctx, plan, opts); err != nil {
				return nil, nil, err
			}
			note = approvalNote(approved, h.gate.Approvals().TTL())
		}
	}
	out := resultContent(res)
	if note != nil {
		out.Content = append([]mcp.Content{note}, out.Content...)
	}
	out.Content = append(out.Content, h.artifactContent(ctx, res.Artifacts)...)
	return out, res, nil
}

// prepare checks a run_code call once, as a one-shot run or as a call in
// its session, and returns the plan with what runs it. A task's call was
// checked when the task started (prepareTask): its plan is reused.
func (h *handlers) prepare(ctx context.Context, args engine.Request) (runPlan, *engine.Plan, error) {
	run := h.eng.RunPlan
	if args.SessionID != "" {
		run = h.sessions.RunPlan
	}
	if tr := tasks.RunFrom(ctx); tr != nil && (tr.Plan != nil || tr.Err != nil) {
		return run, tr.Plan, tr.Err
	}
	var plan *engine.Plan
	var err error
	if args.SessionID != "" {
		plan, err = h.sessions.Prepare(ctx, args)
	} else {
		plan, err = h.eng.Prepare(ctx, args, false)
	}
	return run, plan, err
}

// prepareTask checks a task-augmented run_code call before its task
// starts (tasks.Config.Prepare). Arguments that do not decode get no plan:
// the tool's own decoding answers them.
func (h *handlers) prepareTask(ctx context.Context, req *mcp.CallToolRequest) (*engine.Plan, error) {
	var in engine.Request
	if req.Params.Name != "run_code" || json.Unmarshal(req.Params.Arguments, &in) != nil {
		return nil, nil
	}
	_, plan, err := h.prepare(ctx, in)
	return plan, err
}

// runPlan runs a prepared plan.
type runPlan func(context.Context, *engine.Plan, engine.RunOptions) (*engine.Result, error)

// artifactContent returns images as image blocks (within the inline cap)
// and every other kept file as a resource link.
func (h *handlers) artifactContent(ctx context.Context, arts []engine.Artifact) []mcp.Content {
	owner := principal.FromContext(ctx).Name
	var out []mcp.Content
	limit := h.eng.Config().Artifacts.InlineImageBytes
	for _, a := range arts {
		if a.URI == "" {
			continue
		}
		if outputs.IsImage(a.MIMEType) && a.Size <= int64(limit) {
			if data, ok := h.artifacts.Get(a.URI, owner); ok {
				out = append(out, &mcp.ImageContent{Data: data, MIMEType: a.MIMEType})
				continue
			}
		}
		size := a.Size
		out = append(out, &mcp.ResourceLink{URI: a.URI, Name: a.Path, MIMEType: a.MIMEType, Size: &size,
			Description: "file written by the run; read it with resources/read"})
	}
	return out
}

// resultContent is the unstructured form of a result: a one-line summary
// for people, then the same JSON as structuredContent for older clients.
func resultContent(res any) *mcp.CallToolResult {
	var summary string
	if r, ok := res.(*engine.Result); ok {
		summary = engine.Summary(r)
	}
	data, err := json.Marshal(res)
	if err != nil {
		data = []byte(fmt.Sprintf(`{"error":%q}`, err.Error()))
	}
	content := []mcp.Content{}
	if summary != "" {
		content = append(content, &mcp.TextContent{Text: summary})
	}
	content = append(content, &mcp.TextContent{Text: string(data)})
	// The same JSON is the structured result: encoded once.
	return &mcp.CallToolResult{Content: content, StructuredContent: json.RawMessage(data)}
}
