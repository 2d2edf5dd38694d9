package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the schema snapshots in testdata")

// connect returns a client session talking to a server on eng over the
// SDK's in-memory transports.
func connect(t *testing.T, eng *engine.Engine) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcpserver.New(eng, "test", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, nil)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// offlineEngine has a Docker backend whose client is never used by the
// calls under test (listing tools, prompts, completion).
func offlineEngine(t *testing.T) *engine.Engine {
	t.Helper()
	cli, err := docker.NewClient("unix:///nonexistent/docker.sock")
	if err != nil {
		t.Fatal(err)
	}
	b, err := docker.New(cli, docker.Options{AgentPath: testutil.AgentBinary(t)})
	if err != nil {
		t.Fatal(err)
	}
	reg := languages.Builtin()
	return engine.New(config.Default(), reg, b, nil, engine.WithRuntimeVersions(images.NewLocalVersions(cli, reg)))
}

// TestToolSchemasSnapshot pins each tool's name, annotations and schemas:
// a change to them is a change to the API that clients see.
func TestToolSchemasSnapshot(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 12 {
		t.Fatalf("got %d tools", len(res.Tools))
	}
	for _, tool := range res.Tools {
		got, _ := json.MarshalIndent(tool, "", "  ")
		path := filepath.Join("testdata", tool.Name+".snap.json")
		if *update {
			if err := os.WriteFile(path, append(got, '\n'), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/mcpserver -update to create it)", err)
		}
		if strings.TrimSpace(string(want)) != string(got) {
			t.Errorf("tool %s differs from %s (run with -update if intended):\n%s", tool.Name, path, got)
		}
	}
}

func TestToolMetadata(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	res, _ := cs.ListTools(context.Background(), nil)
	byName := map[string]*mcp.Tool{}
	for _, tool := range res.Tools {
		byName[tool.Name] = tool
		if tool.OutputSchema == nil || tool.InputSchema == nil || tool.Annotations == nil || tool.Description == "" {
			t.Errorf("%s lacks schemas, annotations or a description", tool.Name)
		}
	}
	if a := byName["list_languages"].Annotations; !a.ReadOnlyHint || !a.IdempotentHint || *a.OpenWorldHint {
		t.Errorf("list_languages annotations %+v", a)
	}
	if a := byName["run_code"].Annotations; a.ReadOnlyHint || *a.DestructiveHint || *a.OpenWorldHint {
		t.Errorf("run_code annotations %+v", a)
	}
	schema, _ := json.Marshal(byName["run_code"].InputSchema)
	for _, want := range []string{`"required":["language","code"]`, `"timeout_seconds"`, `"files"`} {
		if !strings.Contains(string(schema), want) {
			t.Errorf("run_code input schema lacks %s: %s", want, schema)
		}
	}
}

func TestPromptsAndCompletion(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	ctx := context.Background()
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) != 2 {
		t.Fatalf("prompts %v, %v", prompts, err)
	}
	got, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "solve_with_code", Arguments: map[string]string{"task": "sum 1..100", "language": "ts"}})
	if err != nil {
		t.Fatal(err)
	}
	text := got.Messages[0].Content.(*mcp.TextContent).Text
	if !strings.Contains(text, "sum 1..100") || !strings.Contains(text, `"typescript"`) || !strings.Contains(text, "run_code") {
		t.Errorf("prompt text: %s", text)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "solve_with_code", Arguments: map[string]string{"task": "x", "language": "cobol"}}); err == nil || !strings.Contains(err.Error(), "available") {
		t.Errorf("unknown language in prompt: %v", err)
	}
	comp, err := cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "solve_with_code"},
		Argument: mcp.CompleteParamsArgument{Name: "language", Value: "py"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(comp.Completion.Values, ",") != "py,python,python3" {
		t.Errorf("completion %v", comp.Completion.Values)
	}
	comp, _ = cs.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: mcpserver.RunOutputTemplate},
		Argument: mcp.CompleteParamsArgument{Name: "stream", Value: "std"},
	})
	if len(comp.Completion.Values) != 2 {
		t.Errorf("stream completion %v", comp.Completion.Values)
	}
}

func TestBadInputIsToolError(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	cases := []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"language": "cobol", "code": "x"}, "available: " + strings.Join(languages.Builtin().Names(), ", ")},
		{map[string]any{"language": "python", "code": ""}, "code is empty"},
		{map[string]any{"language": "python", "code": "x", "files": []any{map[string]any{"path": "../x", "content": "y"}}}, "climbs out"},
		{map[string]any{"language": "python", "code": "x", "timeout_seconds": 3600}, "maximum"},
		{map[string]any{"language": "python"}, "code"},
		// Docker is unreachable for this engine: a clear error, not a crash.
		{map[string]any{"language": "python", "code": "print(1)"}, "doctor"},
	}
	for _, c := range cases {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: c.args})
		if err != nil {
			t.Fatalf("%v: protocol error %v; want a tool error", c.args, err)
		}
		text := res.Content[0].(*mcp.TextContent).Text
		if !res.IsError || !strings.Contains(text, c.want) {
			t.Errorf("%v: isError=%v text %q, want %q", c.args, res.IsError, text, c.want)
		}
	}
	// An unknown tool is a protocol error.
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "nope"}); err == nil {
		t.Error("unknown tool accepted")
	}
}

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
	if err != nil || len(rl.Resources) != 1 || rl.Resources[0].URI != mcpserver.LanguagesURI {
		t.Fatalf("resources %+v %v", rl, err)
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
