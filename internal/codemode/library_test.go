package codemode

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestGeneratedSignaturesFollowTheToolsSchemas(t *testing.T) {
	for _, tc := range []struct {
		name string
		tool *mcp.Tool
		py   []string // in the Python function
		ts   []string // in the TypeScript declaration
	}{
		{"keyword arguments, required first, typed",
			&mcp.Tool{Name: "search", Description: "Find things.", InputSchema: map[string]any{"type": "object", "required": []any{"q"},
				"properties": map[string]any{"limit": map[string]any{"type": "integer"}, "q": map[string]any{"type": "string", "description": "the query"}}}},
			[]string{"def search(*, q: str, limit: int | None = None) -> dict:", `"""Find things.`, "q (string, required): the query", `{k: v for k, v in (("q", q), ("limit", limit),) if v is not None}`},
			[]string{"export function search(args: { q: string; limit?: number }): Promise<CallToolResult<unknown>>;", "@param args.q the query"}},
		{"a name that is no Python name takes **arguments; a tool's name is made one",
			&mcp.Tool{Name: "get-env", InputSchema: map[string]any{"type": "object", "properties": map[string]any{"class": map[string]any{"type": "string"}, "x-y": map[string]any{}}}},
			[]string{"def get_env(**arguments) -> dict:", "The tool get-env of MCP server s.", `return _call("s", "get-env", arguments)`},
			[]string{`export function get_env(args?: { class?: string; "x-y"?: unknown })`}},
		{"enums, arrays and output schemas are typed; comments and docstrings cannot be closed early",
			&mcp.Tool{Name: "call", Description: `Ends """ and */ here.`,
				InputSchema:  map[string]any{"type": "object", "required": []any{"mode"}, "properties": map[string]any{"mode": map[string]any{"enum": []any{"a", "b"}}, "ids": map[string]any{"type": "array", "items": map[string]any{"type": "number"}}}},
				OutputSchema: map[string]any{"type": "object", "properties": map[string]any{"n": map[string]any{"type": "integer"}}}},
			[]string{"def call_(*, mode: Any, ids: list | None = None) -> dict:", `Ends \"\"\" and */ here.`},
			[]string{`export function call_(args: { mode: "a" | "b"; ids?: Array<number> }): Promise<CallToolResult<{ n?: number }>>;`, `Ends """ and *\/ here.`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			py, ts := pythonFunc("s", tc.tool, true), typesFunc(tc.tool)
			for _, want := range tc.py {
				if !strings.Contains(py, want) {
					t.Errorf("python lacks %q:\n%s", want, py)
				}
			}
			for _, want := range tc.ts {
				if !strings.Contains(ts, want) {
					t.Errorf("typescript lacks %q:\n%s", want, ts)
				}
			}
		})
	}
}
