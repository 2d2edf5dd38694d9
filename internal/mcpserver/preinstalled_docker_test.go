//go:build !fast

package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// pythonDataLibraries are the distributions the python image promises
// (issue #18), each with a module a program imports from it.
var pythonDataLibraries = map[string]string{
	"numpy": "numpy", "pandas": "pandas", "matplotlib": "matplotlib.pyplot",
	"scikit-learn": "sklearn", "scipy": "scipy", "sympy": "sympy",
	"statsmodels": "statsmodels.api", "seaborn": "seaborn", "requests": "requests",
	"beautifulsoup4": "bs4", "lxml": "lxml.etree", "networkx": "networkx",
	"openpyxl": "openpyxl", "pillow": "PIL.Image", "pyyaml": "yaml",
	"tabulate": "tabulate", "nltk": "nltk", "plotly": "plotly.express",
}

// TestListLanguagesReportsPythonPackagesThatImport: list_languages gives
// python's preinstalled packages with versions, every library the image
// promises is among them, and a python run imports each one and finds the
// listed version.
func TestListLanguagesReportsPythonPackagesThatImport(t *testing.T) {
	cfg := config.Default()
	// Importing all of them at once takes a few hundred MB and, on a loaded
	// machine, tens of seconds of one CPU.
	cfg.Limits.MemoryMB = max(cfg.Limits.MemoryMB, 1024)
	cfg.Limits.MaxTimeoutSeconds = max(cfg.Limits.MaxTimeoutSeconds, 120)
	eng, b := testutil.Engine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
	cs := connect(t, eng)
	ctx := context.Background()

	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "list_languages"})
	if err != nil || res.IsError {
		t.Fatalf("list_languages: %v %+v", err, res)
	}
	var langs mcpserver.LanguagesOutput
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, &langs); err != nil {
		t.Fatal(err)
	}
	var listed map[string]string
	for _, l := range langs.Languages {
		switch l.Name {
		case "python":
			listed = l.Packages
		case "bash":
			if len(l.Packages) != 0 {
				t.Errorf("bash lists packages %v; its image holds none", l.Packages)
			}
		}
	}
	for dist := range pythonDataLibraries {
		if listed[dist] == "" {
			t.Errorf("list_languages gives python no version of %s: %v", dist, listed)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	var code strings.Builder
	code.WriteString("import importlib, importlib.metadata\n")
	dists := make([]string, 0, len(pythonDataLibraries))
	for dist := range pythonDataLibraries {
		dists = append(dists, dist)
	}
	sort.Strings(dists)
	for _, dist := range dists {
		fmt.Fprintf(&code, "importlib.import_module(%q); print(%q, importlib.metadata.version(%q))\n", pythonDataLibraries[dist], dist, dist)
	}
	run, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{
		"language": "python", "code": code.String(), "timeout_seconds": 120,
	}})
	if err != nil {
		t.Fatal(err)
	}
	var out engine.Result
	data, _ = json.Marshal(run.StructuredContent)
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	if out.Status != "ok" {
		t.Fatalf("importing the preinstalled libraries: status %s, stderr:\n%s", out.Status, out.Stderr)
	}
	for _, dist := range dists {
		if want := dist + " " + listed[dist] + "\n"; !strings.Contains(out.Stdout, want) {
			t.Errorf("the run printed no %q (the listed version):\n%s", strings.TrimSpace(want), out.Stdout)
		}
	}
}
