//go:build !fast

package e2e

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// callTool calls tool on the server at url and returns its structured
// result; a tool error fails the test.
func callTool(t *testing.T, url, tool string, args map[string]any) map[string]any {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		msg := ""
		if res != nil && len(res.Content) > 0 {
			if tc, ok := res.Content[0].(*mcp.TextContent); ok {
				msg = tc.Text
			}
		}
		t.Fatalf("%s: %v %s", tool, err, msg)
	}
	out, ok := res.StructuredContent.(map[string]any)
	if !ok {
		t.Fatalf("%s: no structured result: %+v", tool, res)
	}
	return out
}

// The server with --isolation gvisor runs every sandbox under gVisor's
// kernel: one-off runs from the warm pool and sessions say isolation
// gvisor, and the programs see gVisor's kernel.
func TestIsolationGVisorThroughMCP(t *testing.T) {
	testutil.Runsc(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	s := serveOn(t, t.TempDir(), "--isolation", "gvisor", "--pool-size", "0", "--pool-sizes", "python=1")
	res := callTool(t, s.url, "run_code", map[string]any{"language": "python",
		"code": "import platform\nprint(platform.release())\nprint(open('/proc/version').read())"})
	if res["isolation"] != "gvisor" || !strings.Contains(res["stdout"].(string), "gvisor") {
		t.Errorf("run_code under --isolation gvisor: isolation %v, stdout %q (stderr %q)", res["isolation"], res["stdout"], res["stderr"])
	}
	sess := callTool(t, s.url, "create_session", map[string]any{"language": "python"})
	if sess["isolation"] != "gvisor" {
		t.Errorf("create_session under --isolation gvisor: isolation %v", sess["isolation"])
	}
	id := sess["session_id"].(string)
	callTool(t, s.url, "run_code", map[string]any{"language": "python", "session_id": id, "code": "x = 41"})
	got := callTool(t, s.url, "run_code", map[string]any{"language": "python", "session_id": id, "code": "import os\nprint(x + 1, os.uname().release)"})
	if got["isolation"] != "gvisor" || !strings.Contains(got["stdout"].(string), "42 ") || !strings.Contains(got["stdout"].(string), "gvisor") {
		t.Errorf("a session's call: isolation %v, stdout %q (stderr %q)", got["isolation"], got["stdout"], got["stderr"])
	}
}

// A call may ask for gVisor where the operator's isolation is container
// (tightening), and gets a sandbox made for it; a call that asks nothing
// runs in a container, as the operator set.
func TestACallMayTightenIsolationToGVisor(t *testing.T) {
	testutil.Runsc(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	s := serveOn(t, t.TempDir(), "--pool-size", "0", "--pool-sizes", "bash=1")
	plain := callTool(t, s.url, "run_code", map[string]any{"language": "bash", "code": "uname -r"})
	if plain["isolation"] != "container" || strings.Contains(plain["stdout"].(string), "gvisor") {
		t.Errorf("a call that asked nothing: isolation %v, kernel %q; want a container", plain["isolation"], plain["stdout"])
	}
	asked := callTool(t, s.url, "run_code", map[string]any{"language": "bash", "code": "uname -r", "isolation": "gvisor"})
	if asked["isolation"] != "gvisor" || !strings.Contains(asked["stdout"].(string), "gvisor") {
		t.Errorf("a call that asked for gvisor: isolation %v, kernel %q (stderr %q)", asked["isolation"], asked["stdout"], asked["stderr"])
	}
	sess := callTool(t, s.url, "create_session", map[string]any{"language": "bash", "isolation": "gvisor"})
	if sess["isolation"] != "gvisor" {
		t.Errorf("create_session with isolation gvisor: isolation %v", sess["isolation"])
	}
	got := callTool(t, s.url, "run_code", map[string]any{"language": "bash", "session_id": sess["session_id"], "code": "uname -r"})
	if got["isolation"] != "gvisor" || !strings.Contains(got["stdout"].(string), "gvisor") {
		t.Errorf("a gVisor session's call: isolation %v, kernel %q", got["isolation"], got["stdout"])
	}
}
