package mcpserver_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
)

var update = flag.Bool("update", false, "rewrite the schema snapshots in testdata")

// connect returns a client session talking to a server on eng over the
// SDK's in-memory transports.
func connect(t *testing.T, eng *engine.Engine) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, eng, nil)
}

// connectWith is connect with the client's options (its notification
// handlers).
func connectWith(t *testing.T, eng *engine.Engine, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	server := mcpserver.New(eng, "test", nil)
	st, ct := mcp.NewInMemoryTransports()
	ss, err := server.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts)
	cs, err := client.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// offlineEngine has a backend that the calls under test (listing tools,
// prompts, completion, rejecting bad input) never reach: the fake one, so
// these tests need no Docker.
func offlineEngine(t *testing.T) *engine.Engine {
	t.Helper()
	b := fake.New(t.TempDir())
	b.SetBeforeCreate(func(context.Context, sandbox.Template) error {
		return fmt.Errorf("%w: the test's backend is offline", sandbox.ErrUnavailable)
	})
	return engine.New(config.Default(), languages.Builtin(), b, nil)
}

// TestToolSchemasSnapshot pins each tool's name, annotations and schemas:
// a change to them is a change to the API that clients see.
func TestToolSchemasSnapshot(t *testing.T) {
	cs := connect(t, offlineEngine(t))
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Tools) != 15 {
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
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "solve_with_code", Arguments: map[string]string{"task": "x", "language": "intercal"}}); err == nil || !strings.Contains(err.Error(), "available") {
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
		{map[string]any{"language": "intercal", "code": "x"}, "available: " + strings.Join(languages.Builtin().Names(), ", ")},
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
