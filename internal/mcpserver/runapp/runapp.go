// Package runapp is the run view of mcp-code-runner: an MCP App (the
// io.modelcontextprotocol/ui extension) that hosts which render Apps show
// beside run_code, the execution tools and the session tools. Those tools
// name it in their _meta.ui.resourceUri; the view is one HTML document,
// served as a ui:// resource of MIME type text/html;profile=mcp-app, with
// its script and styles inline and embedded in the binary: no CDN, no
// network of its own (everything goes through the host's bridge), and a
// Content-Security-Policy that admits only its own script and styles.
// Hosts without Apps ignore the _meta and get the tools' usual results.
package runapp

import (
	"context"
	"crypto/sha256"
	_ "embed"
	"encoding/base64"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// URI is the view's resource.
const URI = "ui://mcp-code-runner/run"

// MIMEType marks an MCP App's HTML document.
const MIMEType = "text/html;profile=mcp-app"

// legacyMetaKey is the flat _meta key hosts of the extension's first
// drafts read; the SDK's registerAppTool sets both.
const legacyMetaKey = "ui/resourceUri"

var (
	//go:embed view/app.html
	page string
	//go:embed view/app.js
	script string
	//go:embed view/app.css
	styles string
)

// Tools are the tools whose results the view shows.
var Tools = map[string]bool{
	"run_code": true, "start_execution": true, "get_execution": true, "cancel_execution": true,
	"create_session": true, "list_sessions": true, "fork_session": true, "pause_session": true, "close_session": true,
}

// html is the view's document: the page with its styles and script inline
// and a policy that admits exactly them (by hash), images from data: URLs
// (the run's plots, which come in the tool result) and nothing else.
var html = func() string {
	csp := strings.Join([]string{
		"default-src 'none'",
		"script-src " + hashSource(script),
		"style-src " + hashSource(styles),
		"img-src data:",
		"connect-src 'none'",
		"base-uri 'none'",
		"form-action 'none'",
	}, "; ")
	return strings.NewReplacer("{{CSP}}", csp, "{{CSS}}", styles, "{{JS}}", script).Replace(page)
}()

func hashSource(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) + "'"
}

// HTML returns the view's document.
func HTML() string { return html }

// Annotate names the view in t's _meta when t is one of [Tools]; other
// tools are left as they are.
func Annotate(t *mcp.Tool) {
	if !Tools[t.Name] {
		return
	}
	if t.Meta == nil {
		t.Meta = mcp.Meta{}
	}
	t.Meta["ui"] = map[string]any{"resourceUri": URI}
	t.Meta[legacyMetaKey] = URI
}

// Register adds the view's resource to s.
func Register(s *mcp.Server) {
	meta := mcp.Meta{"ui": map[string]any{
		// No network, no nested frames: the view reaches the server only
		// through the host.
		"csp":           map[string]any{"connectDomains": []string{}, "resourceDomains": []string{}},
		"prefersBorder": true,
	}}
	s.AddResource(&mcp.Resource{
		URI:         URI,
		Name:        "run-view",
		Title:       "Run view",
		Description: "The interactive view of runs, executions and sessions (an MCP App): code, streamed output, plots, tables of CSV and JSON files, re-run, cancel.",
		MIMEType:    MIMEType,
		Meta:        meta,
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{
			URI: URI, MIMEType: MIMEType, Text: html, Meta: meta,
		}}}, nil
	})
}
