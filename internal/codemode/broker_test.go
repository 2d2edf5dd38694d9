//go:build !fast

package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

func newBroker(t *testing.T, servers map[string]config.CodeModeServer, tune func(*config.CodeMode)) (*Broker, *[]Record) {
	t.Helper()
	cfg := config.Default().CodeMode
	cfg.Servers = servers
	if tune != nil {
		tune(&cfg)
	}
	getenv := func(k string) string { return map[string]string{"UPSTREAM_TOKEN": "tok-from-env"}[k] }
	secret := func(name string) (string, error) {
		if name == "api" {
			return "tok-from-secret", nil
		}
		return "", fmt.Errorf("no secret %q", name)
	}
	b := New(cfg, secret, getenv, nil)
	t.Cleanup(b.Close)
	var mu sync.Mutex
	recs := &[]Record{}
	b.Observe(func(r Record) { mu.Lock(); *recs = append(*recs, r); mu.Unlock() })
	return b, recs
}

type callResult struct {
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StructuredContent map[string]any `json:"structuredContent"`
	IsError           bool           `json:"isError"`
}

func mustCall(t *testing.T, r *Run, server, tool string, args any) callResult {
	t.Helper()
	res := callTool(t, r, server, tool, args)
	if res.Error != "" {
		t.Fatalf("%s.%s: %s", server, tool, res.Error)
	}
	var out callResult
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatalf("%s.%s: result %s: %v", server, tool, res.Result, err)
	}
	return out
}

func callTool(t *testing.T, r *Run, server, tool string, args any) wire.ToolResult {
	t.Helper()
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	return r.CallTool(t.Context(), "run-1", wire.ToolCall{ID: 1, Server: server, Tool: tool, Arguments: raw})
}

func TestABrokeredCallReadsAFileThroughTheFilesystemServerAndIsRecorded(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "n.txt"), []byte("42\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, recs := newBroker(t, map[string]config.CodeModeServer{"fs": filesystemServer(t, dir)}, nil)
	run, err := b.Begin("alice", []string{"fs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := mustCall(t, run, "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "n.txt")})
	if len(out.Content) == 0 || strings.TrimSpace(out.Content[0].Text) != "42" {
		t.Fatalf("read_text_file: %+v", out)
	}
	if len(*recs) != 1 || (*recs)[0].Status != StatusOK || (*recs)[0].Principal != "alice" || (*recs)[0].RunID != "run-1" ||
		(*recs)[0].Tool != "read_text_file" || (*recs)[0].ResultBytes == 0 || (*recs)[0].Arguments != nil {
		t.Fatalf("record: %+v", *recs)
	}
}

func TestARunIsRefusedAServerItWasNotGivenOrThatItsPrincipalIsNotGranted(t *testing.T) {
	dir := t.TempDir()
	b, _ := newBroker(t, map[string]config.CodeModeServer{"fs": filesystemServer(t, dir), "everything": everythingServer(t)},
		func(c *config.CodeMode) {
			c.Grants = []config.CodeModeGrant{{Principals: []string{"alice"}, Servers: []string{"fs"}}}
		})
	if _, err := b.Begin("bob", []string{"fs"}, nil); err == nil || !strings.Contains(err.Error(), `"fs" is not granted to principal "bob"`) ||
		!strings.Contains(err.Error(), "code_mode.grants") {
		t.Fatalf("bob's run with fs: %v", err)
	}
	if _, err := b.Begin("alice", []string{"nope"}, nil); err == nil || !strings.Contains(err.Error(), "those principal alice may use are fs (") {
		t.Fatalf("an unknown server: %v", err)
	}
	run, err := b.Begin("alice", []string{"fs"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	res := callTool(t, run, "everything", "echo", map[string]any{"message": "hi"})
	if !strings.Contains(res.Error, `not given MCP server "everything"`) || !strings.Contains(res.Error, "name it in tools") {
		t.Fatalf("a call of a server the run was not given: %+v", res)
	}
}

func TestAResultOverTheCapIsRefusedWithItsSize(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", 300<<10)
	if err := os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	b, recs := newBroker(t, map[string]config.CodeModeServer{"fs": filesystemServer(t, dir)},
		func(c *config.CodeMode) { c.MaxResultBytes = 100 << 10 })
	run, _ := b.Begin("alice", []string{"fs"}, nil)
	res := callTool(t, run, "fs", "read_text_file", map[string]any{"path": filepath.Join(dir, "big.txt")})
	if res.Result != nil || !strings.Contains(res.Error, "over the 102400 bytes a result may have") {
		t.Fatalf("a huge result: %.300s", res.Error)
	}
	if (*recs)[0].Status != StatusRefused {
		t.Fatalf("record: %+v", (*recs)[0])
	}
}

func TestAHungUpstreamTimesOutAndTheNextCallIsAnswered(t *testing.T) {
	// The timeout bounds connecting too, so it leaves room for node to
	// start the server on a loaded machine (3 s did not, at load 30).
	b, recs := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)},
		func(c *config.CodeMode) { c.CallTimeoutSeconds = 10 })
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	mustCall(t, run, "everything", "echo", map[string]any{"message": "warm"}) // connected
	start := time.Now()
	res := callTool(t, run, "everything", "trigger-long-running-operation", map[string]any{"duration": 60, "steps": 2})
	if !strings.Contains(res.Error, "did not answer trigger-long-running-operation within 10s") || time.Since(start) > 30*time.Second {
		t.Fatalf("a hung call after %v: %+v", time.Since(start), res)
	}
	if (*recs)[1].Status != StatusTimeout {
		t.Fatalf("record: %+v", (*recs)[1])
	}
	if out := mustCall(t, run, "everything", "echo", map[string]any{"message": "after"}); !strings.Contains(out.Content[0].Text, "after") {
		t.Fatalf("echo after the timeout: %+v", out)
	}
}

func TestACrashedStdioServerGivesAClearErrorAndIsStartedAgain(t *testing.T) {
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)}, nil)
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	mustCall(t, run, "everything", "echo", map[string]any{"message": "one"})
	u := b.upstreams["everything"]
	u.mu.Lock()
	proc, ended := u.cmd.Process, u.ended
	u.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	<-ended
	out := mustCall(t, run, "everything", "echo", map[string]any{"message": "two"})
	if !strings.Contains(out.Content[0].Text, "two") || u.starts != 2 {
		t.Fatalf("after a crash: %+v, %d starts", out, u.starts)
	}
	// Killed during a call: the call says the server ended.
	u.mu.Lock()
	proc = u.cmd.Process
	u.mu.Unlock()
	done := make(chan wire.ToolResult, 1)
	go func() {
		done <- callTool(t, run, "everything", "trigger-long-running-operation", map[string]any{"duration": 30, "steps": 2})
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return len(run.slots) == 1 }, "the call in flight")
	_ = proc.Kill()
	if res := <-done; !strings.Contains(res.Error, `MCP server "everything" ended during the call`) {
		t.Fatalf("a call whose server died: %+v", res)
	}
}

func TestAFloodOfCallsIsCutByTheRateLimitAndTheRunsQuota(t *testing.T) {
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)},
		func(c *config.CodeMode) { c.CallsPerMinute = 5; c.MaxCallsPerRun = 1000 })
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	limited := 0
	start := time.Now()
	for i := range 20 {
		res := callTool(t, run, "everything", "echo", map[string]any{"message": fmt.Sprint(i)})
		if strings.Contains(res.Error, "at most 5 a minute per principal") {
			limited++
		}
	}
	// The burst of 5, and one more call for every 12 s the calls took (a
	// loaded machine starts the server slowly): the rest are limited.
	if refilled := int(time.Since(start) / (12 * time.Second)); limited < 20-5-refilled || limited == 0 {
		t.Fatalf("%d of 20 calls limited in %v, want those past the burst of 5 and %d refilled", limited, time.Since(start), refilled)
	}
	b2, _ := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)},
		func(c *config.CodeMode) { c.MaxCallsPerRun = 3 })
	run2, _ := b2.Begin("alice", []string{"everything"}, nil)
	for i := range 4 {
		res := callTool(t, run2, "everything", "echo", map[string]any{"message": "x"})
		if quota := strings.Contains(res.Error, "more than 3 tool calls"); quota != (i == 3) {
			t.Fatalf("call %d: %+v", i, res)
		}
	}
}

func TestSecretsReachTheUpstreamsEnvironmentAndHeadersAndNothingElse(t *testing.T) {
	srv := everythingServer(t)
	srv.Env = map[string]string{"FROM_SECRET": "{secret:api}", "FROM_ENV": "Bearer {env:UPSTREAM_TOKEN}"}
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": srv}, nil)
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	out := mustCall(t, run, "everything", "get-env", map[string]any{})
	var env map[string]string
	if err := json.Unmarshal([]byte(out.Content[0].Text), &env); err != nil {
		t.Fatal(err)
	}
	if env["FROM_SECRET"] != "tok-from-secret" || env["FROM_ENV"] != "Bearer tok-from-env" {
		t.Fatalf("upstream env: %v", env)
	}
	for k := range env {
		if !strings.HasPrefix(k, "FROM_") && !strings.Contains(strings.Join(passedEnv, " "), k) {
			t.Errorf("the upstream inherited %s from the server", k)
		}
	}
}

func TestTheEverythingServerIsCalledOverStreamableHTTPWithItsHeaders(t *testing.T) {
	url := "http://127.0.0.1:" + startEverythingOverHTTP(t) + "/mcp"
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": {URL: url, Headers: map[string]string{"X-Token": "{secret:api}"}}}, nil)
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	out := mustCall(t, run, "everything", "echo", map[string]any{"message": "over http"})
	if !strings.Contains(out.Content[0].Text, "over http") {
		t.Fatalf("echo: %+v", out)
	}
	tools, err := b.Tools(context.Background(), "everything")
	if err != nil || len(tools) < 5 {
		t.Fatalf("tools: %d, %v", len(tools), err)
	}
}

// startEverythingOverHTTP starts the everything server over Streamable
// HTTP and returns its port once it answers. A port taken between
// freePort and its listen (it then exits) gets another, up to three tries.
func startEverythingOverHTTP(t *testing.T) string {
	t.Helper()
	script := npmServer(t, "server-everything")
	for attempt := 1; ; attempt++ {
		port := freePort(t)
		cmd := exec.Command("node", script, "streamableHttp")
		cmd.Env = append(os.Environ(), "PORT="+port)
		var stderr tail
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { _ = cmd.Wait(); close(exited) }()
		t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
		deadline := time.Now().Add(60 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				if attempt < 3 && strings.Contains(stderr.String(), "already in use") {
					deadline = time.Time{} // the next port
					continue
				}
				t.Fatalf("the everything server exited: %s", stderr.String())
			default:
			}
			client := http.Client{Timeout: 2 * time.Second}
			if resp, err := client.Get("http://127.0.0.1:" + port + "/"); err == nil {
				resp.Body.Close()
				return port
			}
			time.Sleep(100 * time.Millisecond)
		}
		if !deadline.IsZero() {
			t.Fatalf("the everything server did not answer on port %s within 60 s: %s", port, stderr.String())
		}
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return fmt.Sprint(ln.Addr().(*net.TCPAddr).Port)
}

func TestTheLibrariesOfEveryToolOfTheEverythingServerParse(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		testutil.SkipUnlessCI(t, "python3 is not installed")
	}
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)}, nil)
	lib, err := b.Library(t.Context(), []string{"everything"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range lib.Files {
		p := filepath.Join(dir, f.Path)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Every tool is a function of the server's module, with its docstring.
	check := `import sys, inspect; sys.path.insert(0, sys.argv[1]); import mcr_tools
m = mcr_tools.everything
for name in m.__all__:
    f = getattr(m, name)
    assert inspect.getdoc(f), name
print(len(m.__all__), inspect.signature(m.get_sum), inspect.signature(m.get_env))`
	out, err := exec.Command(python, "-c", check, filepath.Join(dir, "python")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "(*, a: float, b: float) -> dict ()") {
		t.Fatalf("python: %v\n%s", err, out)
	}
	for _, f := range []string{"index.js", "everything.js"} {
		if out, err := exec.Command("node", "--check", filepath.Join(dir, "node_modules", "mcr-tools", f)).CombinedOutput(); err != nil {
			t.Fatalf("node --check %s: %v\n%s", f, err, out)
		}
	}
	out, err = exec.Command("node", "-e", `const m = require(process.argv[1]); console.log(Object.keys(m).length, typeof m.get_sum)`,
		filepath.Join(dir, "node_modules", "mcr-tools", "everything.js")).CombinedOutput()
	if err != nil || !strings.HasSuffix(strings.TrimSpace(string(out)), "function") {
		t.Fatalf("node: %v\n%s", err, out)
	}
}

func TestACallsArgumentsAreRecordedOnlyWhenTheOperatorAsks(t *testing.T) {
	for _, audit := range []bool{false, true} {
		b, recs := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)},
			func(c *config.CodeMode) { c.AuditArguments = audit })
		run, _ := b.Begin("alice", []string{"everything"}, nil)
		mustCall(t, run, "everything", "echo", map[string]any{"message": "private words"})
		r := (*recs)[0]
		if got := strings.Contains(string(r.Arguments), "private words"); got != audit || r.ArgsBytes == 0 {
			t.Errorf("audit_arguments %v: record %+v", audit, r)
		}
	}
}

func TestARunsCallsInFlightAreBounded(t *testing.T) {
	b, _ := newBroker(t, map[string]config.CodeModeServer{"everything": everythingServer(t)},
		func(c *config.CodeMode) { c.MaxConcurrentCalls = 1 })
	run, _ := b.Begin("alice", []string{"everything"}, nil)
	mustCall(t, run, "everything", "echo", map[string]any{"message": "connected"})
	done := make(chan wire.ToolResult, 1)
	// 5 s: the second call must come while the first is in flight, which a
	// loaded machine's scheduling may delay.
	go func() {
		done <- callTool(t, run, "everything", "trigger-long-running-operation", map[string]any{"duration": 5, "steps": 1})
	}()
	testutil.Eventually(t, 10*time.Second, func() bool { return len(run.slots) == 1 }, "the first call in flight")
	if res := callTool(t, run, "everything", "echo", map[string]any{"message": "second"}); !strings.Contains(res.Error, "already has 1 tool calls in flight") {
		t.Fatalf("a second call at once: %+v", res)
	}
	if res := <-done; res.Error != "" {
		t.Fatalf("the first call: %+v", res)
	}
	mustCall(t, run, "everything", "echo", map[string]any{"message": "after"})
}
