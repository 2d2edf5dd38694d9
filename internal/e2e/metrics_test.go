//go:build !fast

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// requirePrometheus returns the prometheus binary (Debian's package), or
// skips without it, except under CI=true, where it fails.
func requirePrometheus(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("prometheus")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus is required under CI=true (scripts/ensure-test-tools.sh installs it): %v", err)
		}
		t.Skipf("prometheus not installed (apt-get install -y prometheus; set CI=true to make this fail): %v", err)
	}
	return bin
}

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	next  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(r)
}

// startLogged starts cmd, logging its stderr as the test's, and stops it
// at the end of the test: SIGTERM (the server then removes its sandboxes),
// SIGKILL after a minute.
func startLogged(t *testing.T, name string, cmd *exec.Cmd) {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	logged := make(chan struct{})
	go func() {
		defer close(logged)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			t.Log(name+":", sc.Text())
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		exited := make(chan struct{})
		go func() { <-logged; _ = cmd.Wait(); close(exited) }()
		select {
		case <-exited:
		case <-time.After(time.Minute):
			t.Errorf("%s did not exit within a minute of SIGTERM", name)
			_ = cmd.Process.Kill()
			<-exited
		}
	})
}

func httpGet(t *testing.T, u string) (int, string) {
	t.Helper()
	return httpGetWithToken(t, u, "")
}

// httpGetWithToken is httpGet with a bearer token ("" for none).
func httpGetWithToken(t *testing.T, u, token string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, err.Error()
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// promQuery returns the value of the single sample a PromQL query gives,
// or false while it gives none.
func promQuery(t *testing.T, promURL, query string) (float64, bool) {
	t.Helper()
	resp, err := http.Get(promURL + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Status != "success" {
		t.Fatalf("query %s: %v %s", query, err, r.Error)
	}
	if len(r.Data.Result) != 1 {
		return 0, false
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	return v, err == nil
}

// TestPrometheusScrapesServer: a real Prometheus scrapes the server, both
// on its separate metrics listener and, with an operator's bearer token, on
// /mcp's listener (a client's token gets 403 there: the series name every
// principal); after Python runs over MCP, PromQL queries see the runs, their
// latencies and output, the pool, the sandboxes, a live session and a
// refused request. The audit log has a line per run.
func TestPrometheusScrapesServer(t *testing.T) {
	promBin := requirePrometheus(t)
	testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	dir := t.TempDir()
	const token, tokenName = "e2e-metrics-token", "alice"
	const operatorToken = "e2e-metrics-operator-token"
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	metricsAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	auditPath := filepath.Join(dir, "audit.log")
	startLogged(t, "server", exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", addr,
		"--http-auth-tokens", tokenName+"="+token+",ops="+operatorToken, "--http-operators", "ops", "--metrics-addr", metricsAddr, "--metrics-on-http-listener=true", "--audit-log", auditPath, "--log-format", "json",
		"--pool-size", "0", "--pool-sizes", "python=1", "--sweep-interval-seconds", "2"))
	waitFor(t, "server ready", 60*time.Second, func() bool {
		code, _ := httpGet(t, "http://"+addr+"/readyz")
		return code == http.StatusOK
	})

	promAddr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	promConfig := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(promConfig, []byte(fmt.Sprintf(`global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: mcr
    static_configs:
      - targets: [%q]
  - job_name: mcr-main
    authorization:
      credentials: %q
    static_configs:
      - targets: [%q]
`, metricsAddr, operatorToken, addr)), 0o600); err != nil {
		t.Fatal(err)
	}
	startLogged(t, "prometheus", exec.Command(promBin, "--config.file="+promConfig, "--storage.tsdb.path="+filepath.Join(dir, "tsdb"),
		"--web.listen-address="+promAddr, "--log.level=warn"))
	promURL := "http://" + promAddr
	waitFor(t, "prometheus ready", 60*time.Second, func() bool {
		code, _ := httpGet(t, promURL+"/-/ready")
		return code == http.StatusOK
	})

	c := mcp.NewClient(&mcp.Implementation{Name: "e2e-metrics", Version: "1"}, nil)
	cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func(tool string, args map[string]any) map[string]any {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", tool, err, contentText(res))
		}
		var out map[string]any
		data, _ := json.Marshal(res.StructuredContent)
		_ = json.Unmarshal(data, &out)
		return out
	}
	for _, code := range []string{`print("hello metrics")`, `print("again")`, `import sys; sys.exit(3)`} {
		call("run_code", map[string]any{"language": "python", "code": code})
	}
	session := call("create_session", map[string]any{"language": "python"})
	sessionID, _ := session["session_id"].(string)
	call("run_code", map[string]any{"language": "python", "session_id": sessionID, "code": "x = 41\nx + 1"})
	// One request without the token: refused with 401, counted as auth.
	if code, _ := httpGet(t, "http://"+addr+"/mcp"); code != http.StatusUnauthorized {
		t.Fatalf("GET /mcp without a token: %d, want 401", code)
	}

	// Each query's value once Prometheus has scraped the runs above.
	checks := []struct {
		query string
		want  func(float64) bool
		what  string
	}{
		{`up{job="mcr"}`, eq(1), "the metrics listener is scraped"},
		{`up{job="mcr-main"}`, eq(1), "/metrics on the MCP listener is scraped with the operator's bearer token"},
		{`mcr_runs_total{job="mcr",language="python",status="ok",principal="alice"}`, eq(3), "two one-shot ok runs and one session run"},
		{`mcr_runs_total{job="mcr",language="python",status="error",principal="alice"}`, eq(1), "the run that exited 3"},
		{`sum(mcr_run_duration_seconds_count{job="mcr",language="python"})`, eq(4), "every run's total latency observed"},
		{`sum(mcr_run_exec_seconds_count{job="mcr",language="python"})`, eq(4), "every run's exec latency observed"},
		{`sum(mcr_run_queue_wait_seconds_count{job="mcr",language="python"})`, eq(4), "every run's queue wait observed"},
		{`sum(mcr_run_sandbox_acquire_seconds_count{job="mcr",language="python",warm="true"})`, atLeast(1), "a warm sandbox taken from the pool"},
		{`mcr_run_output_bytes_total{job="mcr",language="python",stream="stdout"}`, atLeast(float64(len("hello metrics\nagain\n"))), "stdout bytes counted"},
		{`mcr_pool_size{job="mcr",language="python"}`, atLeast(1), "the python pool's size (its configured 1, or more once runs waited)"},
		{`mcr_pool_served_total{job="mcr",language="python"}`, atLeast(1), "the pool served runs"},
		{`sum(mcr_sandbox_create_seconds_count{job="mcr"})`, atLeast(3), "sandbox creations timed"},
		{`sum(mcr_sandbox_remove_seconds_count{job="mcr"})`, atLeast(1), "sandbox removals timed"},
		{`mcr_sessions_active{job="mcr"}`, eq(1), "the live session"},
		{`mcr_executions_active{job="mcr"}`, eq(0), "no execution running"},
		{`mcr_rejected_requests_total{job="mcr",reason="auth"}`, atLeast(1), "the request without a token"},
		{`mcr_tool_calls_total{job="mcr",tool="run_code",outcome="ok"}`, eq(4), "run_code calls"},
	}
	for _, c := range checks {
		var got float64
		var ok bool
		deadline := time.Now().Add(30 * time.Second)
		for !ok && time.Now().Before(deadline) {
			got, ok = promQuery(t, promURL, c.query)
			ok = ok && c.want(got)
			if !ok {
				time.Sleep(200 * time.Millisecond) // polling Prometheus with a deadline
			}
		}
		if !ok {
			t.Errorf("%s: %s = %v (no match within 30 s)", c.what, c.query, got)
		}
	}

	// The disabled-by-default case is covered in cmd; here /metrics on the
	// MCP listener needs a token like /mcp, and an operator's: alice's
	// token would show her every other principal's runs.
	if code, _ := httpGet(t, "http://"+addr+"/metrics"); code != http.StatusUnauthorized {
		t.Errorf("GET /metrics on the MCP listener without a token: %d, want 401", code)
	}
	if code, body := httpGetWithToken(t, "http://"+addr+"/metrics", token); code != http.StatusForbidden || !strings.Contains(body, "operator role") {
		t.Errorf("GET /metrics on the MCP listener with a client's token: %d %q, want 403 naming the operator role", code, body)
	}

	call("close_session", map[string]any{"session_id": sessionID})
	lines := auditLines(t, auditPath)
	runs := 0
	for _, l := range lines {
		if l["tool"] == "run_code" {
			runs++
			for _, k := range []string{"time", "principal", "language", "code_sha256", "run_id", "sandbox_id", "status", "exit_code", "duration_ms"} {
				if _, ok := l[k]; !ok {
					t.Errorf("audit line without %s: %v", k, l)
				}
			}
		}
	}
	if runs != 4 {
		t.Errorf("audit log: %d run_code lines, want 4: %v", runs, lines)
	}
	if last := lines[len(lines)-1]; last["tool"] != "close_session" || last["session_id"] != sessionID || last["principal"] != tokenName {
		t.Errorf("audit log's last line: %v, want close_session of %s by %s", last, sessionID, tokenName)
	}
}

func contentText(res *mcp.CallToolResult) string {
	if res == nil {
		return "no result"
	}
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text + "\n")
		}
	}
	return b.String()
}

func eq(want float64) func(float64) bool      { return func(v float64) bool { return v == want } }
func atLeast(want float64) func(float64) bool { return func(v float64) bool { return v >= want } }

func auditLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("audit line is not JSON: %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestServeRefusesUnwritableAuditLog: an audit log that cannot be opened
// stops the server at start-up with a message that says what to do.
func TestServeRefusesUnwritableAuditLog(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing-dir", "audit.log")
	out, err := exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", "127.0.0.1:0", "--audit-log", path).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "audit log "+path+" cannot be opened") || !strings.Contains(string(out), "--audit-log") {
		t.Fatalf("serve with an unwritable audit log: err %v, output %s", err, out)
	}
}

// TestProbesWithoutDocker: with the Docker daemon unreachable the server
// still serves, /healthz (liveness) answers 200 and /readyz answers 503
// with the reason.
func TestProbesWithoutDocker(t *testing.T) {
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	startLogged(t, "server", exec.Command(testutil.ServerBinary(t), "serve", "--data-dir", t.TempDir(), "--http", addr,
		"--docker-host", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"), "--pool-size", "0", "--pool-sizes", "bash=1"))
	var code int
	var body string
	waitFor(t, "the server answers /healthz", 30*time.Second, func() bool {
		code, body = httpGet(t, "http://"+addr+"/healthz")
		return code != 0
	})
	if code != http.StatusOK || body != "ok\n" {
		t.Errorf("/healthz: %d %q, want 200 ok", code, body)
	}
	code, body = httpGet(t, "http://"+addr+"/readyz")
	if code != http.StatusServiceUnavailable || !strings.HasPrefix(body, "not ready: the sandbox backend is unreachable") {
		t.Errorf("/readyz: %d %q, want 503 saying the backend is unreachable", code, body)
	}
	code, body = httpGet(t, "http://"+addr+"/metrics")
	if code != http.StatusNotFound || !strings.Contains(body, "metrics are not served on this listener") {
		t.Errorf("/metrics with metrics off: %d %q, want 404 saying how to turn them on", code, body)
	}
}
