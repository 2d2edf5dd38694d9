package conformance

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
)

// serveFixtures serves the fixtures the way the fixture server does: on the
// product's HTTP handler, on loopback.
func serveFixtures(t *testing.T) string {
	t.Helper()
	srv := httptest.NewServer(transport.HTTPHandler(NewServer("test", nil), transport.HTTPOptions{MaxBodyBytes: 1 << 20}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func connectFixtures(t *testing.T, url string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "fixture-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connecting to the fixture server: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestFixtureServer(t *testing.T) {
	url := serveFixtures(t)
	cs := connectFixtures(t, url)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	t.Run("lists every fixture the suite's scenarios call", func(t *testing.T) {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		want := append([]string{
			"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource",
			"test_multiple_content_types", "test_tool_with_logging", "test_tool_with_progress", "test_error_handling",
			"test_sampling", "test_elicitation", "test_elicitation_sep1034_defaults", "test_elicitation_sep1330_enums",
			"json_schema_2020_12_tool", "test_x_mcp_header", "test_missing_capability", "test_streaming_elicitation",
			"test_logging_tool", "test_input_required_result_elicitation", "greet",
		}, TaskTools...)
		for _, w := range want {
			if !slices.Contains(names, w) {
				t.Errorf("tools/list lacks %s; it has %v", w, names)
			}
		}
	})
	t.Run("answers a fixture tool, resource and prompt as the suite expects", func(t *testing.T) {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
		if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
			t.Fatalf("test_simple_text: %+v, %v", res, err)
		}
		rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
		if err != nil || len(rr.Contents) != 1 || !strings.Contains(rr.Contents[0].Text, `"id":"42"`) {
			t.Fatalf("test://template/42/data: %+v, %v", rr, err)
		}
		pr, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_prompt_with_arguments", Arguments: map[string]string{"arg1": "a", "arg2": "b"}})
		if err != nil || len(pr.Messages) != 1 || !strings.Contains(pr.Messages[0].Content.(*mcp.TextContent).Text, "arg1='a', arg2='b'") {
			t.Fatalf("test_prompt_with_arguments: %+v, %v", pr, err)
		}
	})
	t.Run("is behind the product's Origin guard", func(t *testing.T) {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/list"}`))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Origin", "http://attacker.invalid")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("a cross-site request got %d; want 403 from the product's guard", resp.StatusCode)
		}
	})
}
