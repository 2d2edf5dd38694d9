package codemode

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// npmServer is the path of a pinned MCP server of e2e/package.json
// (installed by npm ci in e2e, which make test and CI run), run with node.
func npmServer(t testing.TB, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		testutil.SkipUnlessCI(t, "node is not installed")
	}
	p, err := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", "@modelcontextprotocol", pkg, "dist", "index.js"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		testutil.SkipUnlessCI(t, "%s is not installed: run npm ci in e2e", pkg)
	}
	return p
}

// FilesystemServer is the filesystem server serving dir over stdio.
func filesystemServer(t testing.TB, dir string) config.CodeModeServer {
	return config.CodeModeServer{Command: "node", Args: []string{npmServer(t, "server-filesystem"), dir}}
}

// everythingServer is the everything server over stdio.
func everythingServer(t testing.TB) config.CodeModeServer {
	return config.CodeModeServer{Command: "node", Args: []string{npmServer(t, "server-everything"), "stdio"}}
}
