package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/codemode"
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
func withToolApprover(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	if req == nil || req.Session == nil {
		return ctx
	}
	if caps := req.ClientCapabilities(); caps == nil || caps.Elicitation == nil {
		return ctx
	}
	return codemode.WithApprover(ctx, elicitApprover{req: req})
}

// elicitApprover asks the user of one tool call's client.
type elicitApprover struct{ req *mcp.CallToolRequest }

func (a elicitApprover) Approve(ctx context.Context, server, tool string) (bool, error) {
	owner := principal.FromContext(ctx).Name
	ans, err := a.req.Session.Elicit(ctx, &mcp.ElicitParams{
		Message: fmt.Sprintf("A program run for %s wants to call the tool %s of the MCP server %s. Allow it, for the rest of this run (or session)?", owner, tool, server),
		RequestedSchema: &jsonschema.Schema{Type: "object", Required: []string{"allow"}, Properties: map[string]*jsonschema.Schema{
			"allow": {Type: "boolean", Title: "Allow " + server + "." + tool, Description: "let the program call it for the rest of this run or session"},
		}},
	})
	if err != nil {
		return false, err
	}
	if ans == nil {
		return false, errors.New("no answer")
	}
	allow, _ := ans.Content["allow"].(bool)
	return ans.Action == "accept" && allow, nil
}
