//go:build !fast

package mcpserver_test

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/runapp"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func TestRunCodeOverMCP(t *testing.T) {
	eng, b := testutil.Engine(t, nil)
	testutil.RequireImage(t, b, languages.Builtin(), "bash")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cs := connect(t, eng)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "bash", "code": `echo "hi $1"; seq 1 5000`, "args": []string{"there"},
	}})
	if err != nil || res.IsError {
		t.Fatalf("%v %+v", err, res)
	}
	var out engine.Result
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "ok" || !strings.HasPrefix(out.Stdout, "hi there\n1\n") || !out.StdoutTruncated || out.StdoutURI == "" {
		t.Fatalf("result %+v", out)
	}
	if len(res.Content) != 2 || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "bash run") {
		t.Errorf("content: want a summary then the JSON, got %d blocks", len(res.Content))
	}
	var fromText, fromStructured any
	_ = json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &fromText)
	_ = json.Unmarshal(data, &fromStructured)
	if !reflect.DeepEqual(fromText, fromStructured) {
		t.Errorf("the JSON text block differs from structuredContent")
	}
	full, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: out.StdoutURI})
	if err != nil {
		t.Fatal(err)
	}
	if text := full.Contents[0].Text; !strings.HasSuffix(text, "\n4999\n5000\n") || len(text) != int(out.StdoutBytes) {
		t.Errorf("full output: %d bytes, want %d", len(text), out.StdoutBytes)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "mcr://runs/nope/stdout"}); err == nil {
		t.Error("reading an unknown output succeeded")
	}
	comp, _ := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: mcpserver.RunOutputTemplate},
		Argument: mcp.CompleteParamsArgument{Name: "run_id", Value: ""},
	})
	if len(comp.Completion.Values) == 0 || comp.Completion.Values[0] != out.RunID {
		t.Errorf("run_id completion %v, want %s first", comp.Completion.Values, out.RunID)
	}

	langs, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_languages"})
	if err != nil || langs.IsError {
		t.Fatal(err)
	}
	data, _ = json.Marshal(langs.StructuredContent)
	if !strings.Contains(string(data), `"name":"bash"`) || !strings.Contains(string(data), `"runtime_version":"GNU bash`) {
		t.Errorf("list_languages: %s", data)
	}
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, r := range rl.Resources {
		listed = append(listed, r.URI)
	}
	// The languages and the run view; code mode's APIs only where it is configured.
	if want := []string{mcpserver.LanguagesURI, runapp.URI}; !slices.Equal(listed, want) {
		t.Fatalf("resources %q, want %q", listed, want)
	}
	rt, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(rt.ResourceTemplates) != 3 {
		t.Fatalf("templates %+v %v", rt, err)
	}
	lr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: mcpserver.LanguagesURI})
	if err != nil || !strings.Contains(lr.Contents[0].Text, `"typescript"`) {
		t.Fatalf("languages resource %v", err)
	}
}
