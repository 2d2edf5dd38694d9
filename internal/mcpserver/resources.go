package mcpserver

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// LanguagesURI is the resource that lists the languages.
const LanguagesURI = "mcr://languages"

// Output resource templates: the full stdout or stderr of a run (and of its
// compile stage) whose inline output was truncated.
const (
	RunOutputTemplate     = "mcr://runs/{run_id}/{stream}"
	CompileOutputTemplate = "mcr://runs/{run_id}/compile/{stream}"
	ArtifactTemplate      = "mcr://artifacts/{run_id}/{+path}"
)

func addResources(s *mcp.Server, h *handlers) {
	s.AddResource(&mcp.Resource{
		URI:         LanguagesURI,
		Name:        "languages",
		Title:       "Available languages",
		Description: "Every language run_code accepts, with aliases, runtime versions and availability (JSON).",
		MIMEType:    "application/json",
	}, h.readLanguages)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: RunOutputTemplate,
		Name:        "run-output",
		Title:       "Full output of a run",
		Description: "The full stdout or stderr (stream) of a run whose inline output was truncated, up to the operator's limit; kept for a while after the run.",
		MIMEType:    "text/plain",
	}, h.readOutput)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: ArtifactTemplate,
		Name:        "artifact",
		Title:       "A file a run wrote",
		Description: "A file that a run created or changed in its workspace (listed in the result's artifacts), kept for a while after the run.",
	}, h.readArtifact)
	s.AddResourceTemplate(&mcp.ResourceTemplate{
		URITemplate: CompileOutputTemplate,
		Name:        "compile-output",
		Title:       "Full compiler output of a run",
		Description: "The full stdout or stderr (stream) of a run's compile stage when truncated inline.",
		MIMEType:    "text/plain",
	}, h.readOutput)
}

func (h *handlers) readLanguages(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	data, err := json.MarshalIndent(h.languages(ctx), "", "  ")
	if err != nil {
		return nil, err
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
		URI: req.Params.URI, MIMEType: "application/json", Text: string(data),
	}}}, nil
}

// readOutput serves a kept output to the principal whose run made it; to
// any other it does not exist.
func (h *handlers) readOutput(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	data, ok := h.outputs.Get(uri, principal.FromContext(ctx).Name)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	c := &mcp.ResourceContents{URI: uri, MIMEType: "text/plain"}
	if utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.MIMEType = "application/octet-stream"
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// readArtifact serves a kept artifact to the principal whose run made it;
// to any other it does not exist.
func (h *handlers) readArtifact(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	uri := req.Params.URI
	data, ok := h.artifacts.Get(uri, principal.FromContext(ctx).Name)
	if !ok {
		return nil, mcp.ResourceNotFoundError(uri)
	}
	mt := outputs.MIMEType(uri, data)
	c := &mcp.ResourceContents{URI: uri, MIMEType: mt}
	if strings.HasPrefix(mt, "text/") && utf8.Valid(data) || mt == "application/json" && utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}, nil
}

// recentRunIDs lists the runs of ctx's principal whose output is kept,
// newest first.
func (h *handlers) recentRunIDs(ctx context.Context) []string {
	uris := h.outputs.List(principal.FromContext(ctx).Name)
	seen := map[string]bool{}
	var ids []string
	for _, uri := range slices.Backward(uris) {
		rest := strings.TrimPrefix(uri, outputs.URIPrefix)
		id, _, _ := strings.Cut(rest, "/")
		if !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	return ids
}
