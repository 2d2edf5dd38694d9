package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/runapp"
)

// TestToolsNameTheRunView: the tools whose results the view shows carry
// _meta.ui.resourceUri (and the flat key of earlier hosts); the others carry
// no _meta, so hosts without Apps see the tools they saw before.
func TestToolsNameTheRunView(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		ui, _ := tool.Meta["ui"].(map[string]any)
		got, _ := ui["resourceUri"].(string)
		want := ""
		if runapp.Tools[tool.Name] {
			want = runapp.URI
		}
		if got != want {
			t.Errorf("%s: _meta.ui.resourceUri = %q, want %q", tool.Name, got, want)
		}
		if want == "" && tool.Meta != nil {
			t.Errorf("%s: unexpected _meta %v", tool.Name, tool.Meta)
		}
	}
}

// TestRunViewIsServedAsAnApp: resources/read of the view's URI answers the
// embedded document as text/html;profile=mcp-app, with a policy that
// allows no network.
func TestRunViewIsServedAsAnApp(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: runapp.URI})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Contents) != 1 {
		t.Fatalf("got %d contents", len(res.Contents))
	}
	c := res.Contents[0]
	if c.MIMEType != "text/html;profile=mcp-app" || c.Text != runapp.HTML() {
		t.Errorf("got %s, %d bytes; want the embedded document as text/html;profile=mcp-app", c.MIMEType, len(c.Text))
	}
	ui, _ := c.Meta["ui"].(map[string]any)
	csp, _ := ui["csp"].(map[string]any)
	if csp == nil || len(csp["connectDomains"].([]any)) != 0 {
		t.Errorf("_meta.ui.csp = %v, want no connect domains", ui["csp"])
	}
	if !strings.Contains(c.Text, "ui/initialize") {
		t.Error("the document does not speak the Apps protocol")
	}
}
