package mcpserver_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
)

// TestListLanguagesSaysALanguageOfAnotherArchitectureIsUnavailable: on
// sandboxes of an architecture a language's runtime does not exist for
// (x86-64 assembly and Crystal on arm64), list_languages reports it
// unavailable although its image is present; every other language stays
// available, and on amd64 they all are.
func TestListLanguagesSaysALanguageOfAnotherArchitectureIsUnavailable(t *testing.T) {
	for _, c := range []struct {
		arch        string
		unavailable map[string]bool
	}{
		{"arm64", map[string]bool{"asm": true, "crystal": true}},
		{"amd64", map[string]bool{}},
	} {
		t.Run(c.arch, func(t *testing.T) {
			b := fake.New(t.TempDir())
			b.Arch = c.arch
			cs := connect(t, engine.New(config.Default(), languages.Builtin(), b, nil))
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_languages"})
			if err != nil || res.IsError {
				t.Fatalf("list_languages: %v %+v", err, res)
			}
			data, _ := json.Marshal(res.StructuredContent)
			var out mcpserver.LanguagesOutput
			if err := json.Unmarshal(data, &out); err != nil || len(out.Languages) == 0 {
				t.Fatalf("list_languages: %v, %s", err, data)
			}
			for _, l := range out.Languages {
				if l.Available == c.unavailable[l.Name] {
					t.Errorf("%s on %s: available %v, want %v", l.Name, c.arch, l.Available, !c.unavailable[l.Name])
				}
			}
		})
	}
}
