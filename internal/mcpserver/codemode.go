package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// Code mode's discovery resources: the servers a principal may give its
// runs, and the generated signatures of one server's tools (or of one
// tool), so that a model reads only those it needs.
const (
	APIsURI         = "mcr://apis"
	APIsPrefix      = "mcr://apis/"
	APIServerURI    = "mcr://apis/{server}"
	APIToolTemplate = "mcr://apis/{server}/{tool}"
)

func addCodeModeResources(s *mcp.Server, h *handlers) {
	if h.codeMode == nil {
		return
	}
	s.AddResource(&mcp.Resource{
		URI:         APIsURI,
		Name:        "apis",
		Title:       "MCP servers your code can call",
		Description: "The MCP servers whose tools code run with tools: [server] may call (mcr_tools in Python, mcr-tools in JavaScript and TypeScript), each with its tools' names; mcr://apis/<server> gives their signatures.",
		MIMEType:    "text/markdown",
	}, h.readAPIs)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: APIServerURI,
		Name:        "api-server",
		Title:       "Signatures of an MCP server's tools",
		Description: "The generated Python and TypeScript signatures, with descriptions, of every tool of one MCP server code can call.",
		MIMEType:    "text/markdown",
	}, h.readAPI)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: APIToolTemplate,
		Name:        "api-tool",
		Title:       "Signature of one tool code can call",
		Description: "The generated Python and TypeScript signature, with its description, of one tool of an MCP server code can call.",
		MIMEType:    "text/markdown",
	}, h.readAPI)
}

// readAPIs lists the servers ctx's principal may give its runs.
func (h *handlers) readAPIs(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	who := principal.FromContext(ctx).Name
	var sb strings.Builder
	sb.WriteString("# MCP servers your code can call\n\nGive a run a server with tools: [\"<server>\"] (run_code, start_execution, create_session); read mcr://apis/<server> for its tools' signatures.\n")
	for _, s := range h.codeMode.Config().Granted(who) {
		fmt.Fprintf(&sb, "\n## %s\n\n", s)
		tools, err := h.codeMode.Tools(ctx, s)
		if err != nil {
			fmt.Fprintf(&sb, "(its tools could not be listed: %v)\n", err)
			continue
		}
		for _, t := range tools {
			desc, _, _ := strings.Cut(strings.TrimSpace(t.Description), "\n")
			fmt.Fprintf(&sb, "- %s: %s\n", t.Name, desc)
		}
	}
	return markdown(req.Params.URI, sb.String()), nil
}

// readAPI serves mcr://apis/<server> and mcr://apis/<server>/<tool> to a
// principal granted the server; to any other the server does not exist.
func (h *handlers) readAPI(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	server, tool, _ := strings.Cut(strings.TrimPrefix(uri, APIsPrefix), "/")
	if !h.codeMode.Config().Allows(principal.FromContext(ctx).Name, server) {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	text, err := h.codeMode.Describe(ctx, server, tool)
	if err != nil {
		return nil, err
	}
	return markdown(uri, text), nil
}

func markdown(uri, text string) *mcp.ReadResourceResult {
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/markdown", Text: text}}}
}

// withToolApprover gives ctx the asker of the approvals the operator wants
// for some servers' calls: the client's user, through elicitation, when
// the client declared it. Without one such calls are refused, saying so.
// In the 2026-07-28 era the server cannot ask mid-run: only a one-shot
// run_code's result asks (toolRound), so the calls of a session or a task
// are refused with what the user can do instead.
func withToolApprover(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Session == nil {
		return ctx
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return ctx
	}
	if askedInResult(req) {
		return codemode.WithApprover(ctx, unaskable{})
	}
	return codemode.WithApprover(ctx, elicitApprover{req: req})
}

// unaskable is the approver of a call that no one can be asked about: a
// session's or a task's call in the 2026-07-28 era.
type unaskable struct{}

func (unaskable) Approve(context.Context, string, string) (bool, error) {
	return false, errors.New("in the 2026-07-28 protocol era the server cannot ask the user while a program runs, " +
		"and only a one-shot run_code's result asks (not a session's or a task's); make these calls from a one-shot run_code, " +
		"or ask the operator to drop this approval (code_mode.servers approval)")
}

// elicitApprover asks the user of one tool call's client.
type elicitApprover struct{ req *mcp.CallToolRequest }

func (a elicitApprover) Approve(ctx context.Context, server, tool string) (bool, error) {
	ans, err := a.req.Session.Elicit(ctx, toolApprovalQuestion(principal.FromContext(ctx).Name, server, tool))
	if err != nil {
		return false, err
	}
	if ans == nil {
		return false, errors.New("no answer")
	}
	allow, _ := ans.Content["allow"].(bool)
	return ans.Action == "accept" && allow, nil
}

// toolApprovalID is the id prefix of the input requests that ask about a
// code mode server or tool (codemode.Round) in the 2026-07-28 era.
const toolApprovalID = "approve-tool:"

// toolRound returns the approvals of a one-shot run_code call with tools in
// the 2026-07-28 era, where its result asks the user and the client calls
// again: the call's Round, with the answers this call carries recorded.
// Other calls ask mid-run (withToolApprover), or cannot ask.
func (h *handlers) toolRound(ctx context.Context, req *mcp.CallToolRequest, plan *engine.Plan, task bool) *codemode.Round {
	if h.codeMode == nil || task || plan.Session || len(plan.Tools) == 0 || !askedInResult(req) {
		return nil
	}
	round := h.codeMode.Round(principal.FromContext(ctx).Name, req.Params.RequestState)
	for id, resp := range req.Params.InputResponses {
		key, ok := strings.CutPrefix(id, toolApprovalID)
		if !ok || !h.codeMode.ApprovalKey(key) {
			continue
		}
		ans, _ := resp.(*mcp.ElicitResult)
		allow := false
		if ans != nil && ans.Action == "accept" {
			allow, _ = ans.Content["allow"].(bool)
		}
		round.Answer(key, allow)
	}
	return round
}

// toolApprovalRequests asks, in the result, about the servers and tools
// whose calls the run was refused for want of an answer; nil when there
// are none or the client declared no elicitation (the refusals stand).
func toolApprovalRequests(ctx context.Context, req *mcp.CallToolRequest, round *codemode.Round) mcp.InputRequestMap {
	if round == nil {
		return nil
	}
	needed := round.Needed()
	if caps := req.ClientCapabilities(); len(needed) == 0 || caps == nil || caps.Elicitation == nil {
		return nil
	}
	questions := mcp.InputRequestMap{}
	for _, key := range needed {
		server, tool, _ := strings.Cut(key, "/")
		questions[toolApprovalID+key] = toolApprovalQuestion(principal.FromContext(ctx).Name, server, tool)
	}
	return questions
}

// toolApprovalQuestion asks owner's user whether a program may call tool
// of server (any tool, when tool is empty).
func toolApprovalQuestion(owner, server, tool string) *mcp.ElicitParams {
	what := "the tool " + tool + " of the MCP server " + server
	if tool == "" {
		what = "the tools of the MCP server " + server
	}
	return &mcp.ElicitParams{
		Message: fmt.Sprintf("A program run for %s wants to call %s. Allow it, for the rest of this run (or session)?", owner, what),
		RequestedSchema: &jsonschema.Schema{Type: "object", Required: []string{"allow"}, Properties: map[string]*jsonschema.Schema{
			"allow": {Type: "boolean", Title: "Allow " + strings.TrimSuffix(server+"."+tool, "."), Description: "let the program make these calls for the rest of this run or session"},
		}},
	}
}
