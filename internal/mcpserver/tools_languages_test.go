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

// imageStates is an engine.ImageBuilds whose images stand where the test
// says; nothing is ever built.
type imageStates map[string][2]string

func (s imageStates) ImageState(image string) (string, string) { return s[image][0], s[image][1] }
func (s imageStates) WaitImage(ctx context.Context, _ string, _ func(string, string)) error {
	<-ctx.Done()
	return ctx.Err()
}

// OnBuilt has nothing to tell: these images never finish.
func (imageStates) OnBuilt(func(string)) {}

// TestListLanguagesSaysWhyALanguageIsNotAvailable: a language whose image
// the background builder is making is building or queued (with where the
// build stands), one whose build failed is failed (with why), one whose
// image is absent and not being built is missing, and one whose runtime
// does not exist for the sandboxes' architecture is unsupported_architecture.
func TestListLanguagesSaysWhyALanguageIsNotAvailable(t *testing.T) {
	reg := languages.Builtin()
	tag := func(name string) string {
		l, ok := reg.Lookup(name)
		if !ok {
			t.Fatalf("no language %s", name)
		}
		return reg.ImageOf(l).Tag
	}
	b := fake.New(t.TempDir())
	b.Arch = "arm64"
	b.MissingImages = map[string]bool{tag("rust"): true, tag("haskell"): true, tag("lua"): true, tag("r"): true}
	e := engine.New(config.Default(), reg, b, nil, engine.WithImageBuilds(imageStates{
		tag("rust"):    {engine.ImageBuilding, "step 4/9"},
		tag("haskell"): {engine.ImageQueued, "2 images build first"},
		tag("lua"):     {engine.ImageFailed, "apt-get: unable to fetch lua5.4"},
	}))
	cs := connect(t, e)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "list_languages"})
	if err != nil || res.IsError {
		t.Fatalf("list_languages: %v %+v", err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	var out mcpserver.LanguagesOutput
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("list_languages: %v, %s", err, data)
	}
	got := map[string]mcpserver.LanguageInfo{}
	for _, l := range out.Languages {
		got[l.Name] = l
	}
	for name, want := range map[string][2]string{
		"python":  {"available", ""},
		"rust":    {"building", "step 4/9"},
		"haskell": {"queued", "2 images build first"},
		"lua":     {"failed", "apt-get: unable to fetch lua5.4"},
		"r":       {"missing", ""},
		"asm":     {"unsupported_architecture", ""},
	} {
		l, ok := got[name]
		if !ok {
			t.Errorf("%s: not listed", name)
			continue
		}
		if l.Status != want[0] || l.StatusDetail != want[1] || l.Available != (want[0] == "available") {
			t.Errorf("%s: status %q (%q), available %v; want %q (%q)", name, l.Status, l.StatusDetail, l.Available, want[0], want[1])
		}
	}
}
