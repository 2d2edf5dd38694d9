package docs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// contributorPages name files and packages by path; code moves under them.
var contributorPages = []string{"docs/CONTRIBUTING.md", "docs/ARCHITECTURE.md"}

func TestContributorPathsExist(t *testing.T) {
	root := repoRoot(t)
	for _, page := range contributorPages {
		text, err := os.ReadFile(filepath.Join(root, page))
		if err != nil {
			t.Fatal(err)
		}
		paths := RepoPaths(string(text))
		if len(paths) == 0 {
			t.Errorf("%s names no repository path: the check would check nothing", page)
		}
		for _, p := range paths {
			if _, err := os.Stat(filepath.Join(root, p)); err != nil {
				t.Errorf("%s names `%s`, which is not in the repository: say where it moved", page, p)
			}
		}
	}
}

func TestRepoPathsAreCodeSpansThatNameRepositoryFiles(t *testing.T) {
	text := "see `internal/engine/run.go`, `internal/sandbox/NAME/`, `go test ./internal/PKG/...`,\n" +
		"`internal/mcpserver/testdata/TOOL.snap.json`, `cmd/mcp-code-runner/`, `run.go`, `bin/x`\n" +
		"```\n`internal/inside/a/block.go`\n```\n"
	got := strings.Join(RepoPaths(text), " ")
	if want := "internal/engine/run.go cmd/mcp-code-runner"; got != want {
		t.Errorf("RepoPaths = %q, want %q", got, want)
	}
}
