package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
)

// LanguageInfo describes one language in list_languages and the languages
// resource.
type LanguageInfo struct {
	Name           string   `json:"name" jsonschema:"canonical name, accepted by run_code"`
	DisplayName    string   `json:"display_name" jsonschema:"human name"`
	Aliases        []string `json:"aliases" jsonschema:"other names accepted by run_code"`
	RuntimeVersion string   `json:"runtime_version" jsonschema:"the runtime's own version string; empty when its image is not built"`
	Compiled       bool     `json:"compiled" jsonschema:"whether runs have a separate compile stage"`
	FileName       string   `json:"file_name" jsonschema:"the file the code is saved as, in /workspace"`
	Available      bool     `json:"available" jsonschema:"whether its runtime image is present and runs on the sandboxes' machine architecture, so run_code can use it now"`
	// Status says why a language is not available and whether waiting
	// helps: a run in a building or queued language waits for its image.
	Status       string `json:"status" jsonschema:"available; building or queued (its image is being built in the background: run_code waits for it, with progress); failed (its image's build failed: status_detail says why); missing (no image: the operator builds it); unsupported_architecture (no runtime for the sandboxes' machine architecture)"`
	StatusDetail string `json:"status_detail,omitempty" jsonschema:"where a build stands (step 4/9, 2 images build first) or why it failed; absent when there is nothing to add"`
	// Packages are what the image holds beyond the standard library, read
	// when the image was built; a run imports them with no install.
	Packages map[string]string `json:"packages,omitempty" jsonschema:"packages preinstalled in its image (name to version), importable without installing; absent when there are none"`
}

// LanguagesOutput is list_languages' result.
type LanguagesOutput struct {
	Languages []LanguageInfo `json:"languages" jsonschema:"every language, sorted by name"`
}

// ListLanguagesTool describes list_languages.
func ListLanguagesTool() *mcp.Tool {
	return &mcp.Tool{
		Name:        "list_languages",
		Title:       "List languages",
		Description: "List the languages run_code accepts, with aliases, runtime versions, the packages preinstalled for each (importable without installing), whether each compiles first, and whether its runtime is available now (status: available, building or queued while its image is built in the background, which run_code waits for, failed, missing, unsupported_architecture).",
		Annotations: &mcp.ToolAnnotations{
			Title:          "List languages",
			ReadOnlyHint:   true,
			IdempotentHint: true,
			OpenWorldHint:  new(false),
		},
	}
}

// statusUnsupportedArchitecture is list_languages' status of a language
// whose runtime does not exist for the sandboxes' machine architecture.
const statusUnsupportedArchitecture = "unsupported_architecture"

func addLanguageTools(s *mcp.Server, h *handlers) {
	addTool(s, h, ListLanguagesTool(), h.listLanguages)
}

func (h *handlers) languages(ctx context.Context) LanguagesOutput {
	reg := h.eng.Registry()
	out := LanguagesOutput{Languages: []LanguageInfo{}}
	present := map[string]bool{}
	arch := h.eng.Backend().Architecture(ctx) // "": unknown, so no language is ruled out
	for _, l := range reg.Languages() {
		img := reg.ImageOf(l).Tag
		ok, seen := present[img]
		if !seen {
			ok = h.eng.Backend().CheckImage(ctx, img) == nil
			present[img] = ok
		}
		rt := h.eng.Runtime(ctx, l)
		status, detail := engine.ImageAvailable, ""
		switch {
		case arch != "" && !l.RunsOn(arch):
			ok = false // the agent would refuse it; see languages.Language.Architectures
			status = statusUnsupportedArchitecture
		case !ok:
			status, detail = rt.ImageState, rt.ImageDetail
			if status == "" {
				status = engine.ImageMissing
			}
		}
		aliases := l.Aliases
		if aliases == nil {
			aliases = []string{}
		}
		out.Languages = append(out.Languages, LanguageInfo{
			Name: l.Name, DisplayName: l.DisplayName, Aliases: aliases,
			RuntimeVersion: rt.Version, Compiled: l.Compiled(),
			FileName: l.File, Available: ok, Status: status, StatusDetail: detail,
			Packages: rt.Packages,
		})
	}
	return out
}

func (h *handlers) listLanguages(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, LanguagesOutput, error) {
	out := h.languages(ctx)
	return resultContent(out), out, nil
}
