package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// teamTokens are the tokens of the isolation tests: two users and an
// operator.
var teamTokens = []config.Token{
	{Name: "alice", Value: "alice-s3cret"},
	{Name: "bob", Value: "bob-s3cret"},
	{Name: "ops", Value: "ops-s3cret", Operator: true},
}

// bearer adds a bearer token to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// connectAs connects the SDK's Streamable HTTP client to url with token.
func connectAs(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "team-test", Version: "1"}, nil)
	cs, err := client.Connect(context.Background(), &mcp.StreamableClientTransport{
		Endpoint: url, DisableStandaloneSSE: true, HTTPClient: &http.Client{Transport: bearer{token}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// postRaw posts one JSON-RPC message with token and returns the status.
func postRaw(t *testing.T, url, token, body string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// cancelAll sends, with token, notifications/cancelled for every request
// id a client has used so far (the SDK numbers them from 1).
func cancelAll(t *testing.T, url, token string) {
	t.Helper()
	for id := range 41 {
		postRaw(t, url, token, fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"test"}}`, id))
	}
}

func callTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
}

// okTool calls a tool that must succeed and decodes its result into out.
func okTool(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) {
	t.Helper()
	res := callTool(t, cs, name, args)
	if res.IsError {
		t.Fatalf("%s: %s", name, toolText(res))
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
}

func toolText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// sameAsMissing checks that a call about another principal's id is the
// error a call about a missing id gets, word for word.
func sameAsMissing(t *testing.T, what string, cs *mcp.ClientSession, name string, args map[string]any, idKey, missingID string) {
	t.Helper()
	got := callTool(t, cs, name, args)
	id := args[idKey].(string)
	args[idKey] = missingID
	missing := callTool(t, cs, name, args)
	args[idKey] = id
	if !got.IsError || !missing.IsError {
		t.Errorf("%s: isError %v (missing id: %v): %s", what, got.IsError, missing.IsError, toolText(got))
		return
	}
	if g, w := toolText(got), strings.ReplaceAll(toolText(missing), missingID, id); g != w {
		t.Errorf("%s: got %q, want the answer for a missing id %q", what, g, w)
	}
}

// readErr reads a resource that must not be readable and returns the error
// with the URI taken out.
func readErr(t *testing.T, cs *mcp.ClientSession, uri string) string {
	t.Helper()
	_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err == nil {
		t.Errorf("%s is readable", uri)
		return ""
	}
	return strings.ReplaceAll(err.Error(), uri, "URI")
}
