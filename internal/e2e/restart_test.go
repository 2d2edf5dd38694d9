//go:build !fast

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

const (
	restartAlice = "alice-token-0123456789abcdef"
	restartBob   = "bob-token-0123456789abcdef01"
)

// startServerOn runs `serve --http` on dataDir with alice's and bob's
// tokens and waits until it answers.
func startServerOn(t *testing.T, dataDir string) *server {
	t.Helper()
	return serveOn(t, dataDir, "--pool-size", "0", "--sweep-interval-seconds", "2", "--http-auth-tokens", "alice="+restartAlice+",bob="+restartBob)
}

func connectAs(t *testing.T, url, token string) *mcp.ClientSession {
	t.Helper()
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token: token, next: http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// call calls a tool and decodes its structured content into out.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any, out any) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	data, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatal(err)
	}
}

func readResource(cs *mcp.ClientSession, uri string) (string, error) {
	res, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
	if err != nil {
		return "", err
	}
	if len(res.Contents) == 0 {
		return "", fmt.Errorf("%s: no contents", uri)
	}
	if res.Contents[0].Text != "" {
		return res.Contents[0].Text, nil
	}
	return string(res.Contents[0].Blob), nil
}

// TestRestartKeepsResultsOutputsAndArtifacts: kill -9 of the server, then
// a new one on the same data directory: every finished result, output URI
// and artifact URI reads the same for its owner (and not for another), an
// execution running at the kill ends interrupted with its partial output,
// and no container is left behind.
func TestRestartKeepsResultsOutputsAndArtifacts(t *testing.T) {
	cli := testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "bash")
	dataDir := t.TempDir()
	first := startServerOn(t, dataDir)
	alice := connectAs(t, first.url, restartAlice)

	var run engine.Result
	call(t, alice, "run_code", map[string]any{"language": "bash",
		"code": `head -c 100000 /dev/zero | tr '\0' x; echo; echo kept > report.txt`}, &run)
	if run.StdoutURI == "" || len(run.Artifacts) != 1 || run.Artifacts[0].URI == "" {
		t.Fatalf("the run kept no output or artifact URI: %+v", run)
	}
	var finished executions.Snapshot
	call(t, alice, "start_execution", map[string]any{"language": "bash", "code": "echo finished-execution"}, &finished)
	call(t, alice, "get_execution", map[string]any{"execution_id": finished.ExecutionID, "wait_seconds": 30}, &finished)
	if finished.Status != executions.StatusFinished {
		t.Fatalf("the execution did not finish: %+v", finished)
	}
	var running executions.Snapshot
	call(t, alice, "start_execution", map[string]any{"language": "bash", "code": "echo partial-output; sleep 300"}, &running)
	waitFor(t, "the running execution's output", 60*time.Second, func() bool {
		var s executions.Snapshot
		// wait_seconds paces the polls below the server's rate limit.
		call(t, alice, "get_execution", map[string]any{"execution_id": running.ExecutionID, "wait_seconds": 1}, &s)
		return strings.Contains(s.Stdout, "partial-output")
	})
	// Its output reaches the store within the flush interval (250 ms).
	call(t, alice, "get_execution", map[string]any{"execution_id": running.ExecutionID, "wait_seconds": 1}, &running)

	pid := first.cmd.Process.Pid
	_ = first.cmd.Process.Kill()
	_ = first.cmd.Wait()

	next := startServerOn(t, dataDir)
	alice = connectAs(t, next.url, restartAlice)
	bob := connectAs(t, next.url, restartBob)
	if full, err := readResource(alice, run.StdoutURI); err != nil || len(full) < 100000 {
		t.Errorf("the full output after the restart: %d bytes, %v", len(full), err)
	}
	if got, err := readResource(alice, run.Artifacts[0].URI); err != nil || got != "kept\n" {
		t.Errorf("the artifact after the restart: %q, %v", got, err)
	}
	for _, uri := range []string{run.StdoutURI, run.Artifacts[0].URI} {
		if _, err := readResource(bob, uri); err == nil {
			t.Errorf("bob reads alice's %s after the restart", uri)
		}
	}
	var got executions.Snapshot
	call(t, alice, "get_execution", map[string]any{"execution_id": finished.ExecutionID}, &got)
	if got.Status != executions.StatusFinished || !strings.Contains(got.Stdout, "finished-execution") {
		t.Errorf("the finished execution after the restart: %+v", got)
	}
	call(t, alice, "get_execution", map[string]any{"execution_id": running.ExecutionID}, &got)
	if got.Status != executions.StatusInterrupted || !strings.Contains(got.Stdout, "partial-output") || !strings.Contains(got.Error, "restarted") {
		t.Errorf("the execution running at the kill, after the restart: %+v", got)
	}
	if res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "get_execution", Arguments: map[string]any{"execution_id": finished.ExecutionID}}); err == nil && !res.IsError {
		t.Error("bob reads alice's execution after the restart")
	}
	waitFor(t, "the killed server's containers removed", 30*time.Second, func() bool { return len(containersOf(t, cli, pid)) == 0 })
}
