package console

import (
	"bufio"
	"context"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/audit"
	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

const (
	clientToken   = "client-token-0123456789abcdef"
	operatorToken = "operator-token-0123456789abcdef"
)

// newConsole serves a console on an engine whose backend no test reaches,
// with a client's token and an operator's (none when open).
func newConsole(t *testing.T, open bool) (*httptest.Server, *Console) {
	t.Helper()
	eng := engine.New(config.Default(), languages.Builtin(), fake.New(t.TempDir()), nil)
	opts := transport.HTTPOptions{}
	if !open {
		opts.Tokens = []config.Token{{Name: "alice", Value: clientToken}, {Name: "ops", Value: operatorToken, Operator: true}}
	}
	log := audit.New(io.Discard)
	_ = log.Write(audit.Entry{Time: time.Now(), Principal: "alice", Tool: "run_code", Status: "ok"})
	c, h := build(Deps{Engine: eng, Executions: executions.NewManager(eng), Sessions: sessions.NewManager(eng),
		Audit: log, HTTP: opts, Refresh: 20 * time.Millisecond, Approvals: approval.New(eng.Store(), time.Hour, nil)})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv, c
}

func noRedirect() *http.Client {
	return &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// reply is an answer, its body read.
type reply struct {
	StatusCode int
	Status     string
	Header     http.Header
	cookies    []*http.Cookie
	Body       string
}

func (r reply) Cookies() []*http.Cookie { return r.cookies }

func do(t *testing.T, method, u string, header http.Header, form url.Values) reply {
	t.Helper()
	body := ""
	if form != nil {
		body = form.Encode()
	}
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(req.Header, header)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	res, err := noRedirect().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return reply{StatusCode: res.StatusCode, Status: res.Status, Header: res.Header, cookies: res.Cookies(), Body: string(data)}
}

func bearerHeader(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }

// signIn logs the operator in and returns the console session's cookie.
func signIn(t *testing.T, srv *httptest.Server) *http.Cookie {
	t.Helper()
	res := do(t, http.MethodPost, srv.URL+Path+"/login", nil, url.Values{"token": {operatorToken}})
	if res.StatusCode != http.StatusSeeOther {
		t.Fatalf("login: %s", res.Status)
	}
	for _, c := range res.Cookies() {
		if c.Name == cookieName {
			return c
		}
	}
	t.Fatal("login gave no cookie")
	return nil
}

func TestOnlyOperatorsGetIn(t *testing.T) {
	srv, _ := newConsole(t, false)
	for _, tc := range []struct {
		name   string
		header http.Header
		want   int
	}{
		{"no credentials get the login page", nil, http.StatusUnauthorized},
		{"a token the server does not know", bearerHeader("nope"), http.StatusUnauthorized},
		{"a client's token", bearerHeader(clientToken), http.StatusForbidden},
		{"an operator's token", bearerHeader(operatorToken), http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, path := range []string{Path, Path + "/"} {
				if res := do(t, http.MethodGet, srv.URL+path, tc.header, nil); res.StatusCode != tc.want {
					t.Errorf("GET %s: %s, want %d", path, res.Status, tc.want)
				}
			}
		})
	}
	t.Run("a client's token at the login form gets no session", func(t *testing.T) {
		res := do(t, http.MethodPost, srv.URL+Path+"/login", nil, url.Values{"token": {clientToken}})
		if res.StatusCode != http.StatusForbidden || len(res.Cookies()) != 0 {
			t.Errorf("%s, cookies %v", res.Status, res.Cookies())
		}
	})
	t.Run("an operator's token at the login form gets a strict, script-proof session", func(t *testing.T) {
		c := signIn(t, srv)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != Path || strings.Contains(c.Value, operatorToken) {
			t.Errorf("cookie %+v", c)
		}
		res := do(t, http.MethodGet, srv.URL+Path, http.Header{"Cookie": {c.String()}}, nil)
		if res.StatusCode != http.StatusOK {
			t.Fatalf("with the cookie: %s", res.Status)
		}
		res = do(t, http.MethodPost, srv.URL+Path+"/logout", http.Header{"Cookie": {c.String()}}, url.Values{})
		if res.StatusCode != http.StatusSeeOther {
			t.Fatalf("logout: %s", res.Status)
		}
		if res := do(t, http.MethodGet, srv.URL+Path, http.Header{"Cookie": {c.String()}}, nil); res.StatusCode != http.StatusUnauthorized {
			t.Errorf("after logout: %s", res.Status)
		}
	})
}

// TestActionsRefuseCrossSiteAndForgedRequests: an action needs the
// session's CSRF token, from the console's own origin.
func TestActionsRefuseCrossSiteAndForgedRequests(t *testing.T) {
	srv, cons := newConsole(t, false)
	c := signIn(t, srv)
	page := do(t, http.MethodGet, srv.URL+Path, http.Header{"Cookie": {c.String()}}, nil).Body
	in, ok := cons.logins.get(c.Value)
	if !ok {
		t.Fatal("no console session behind the cookie")
	}
	if !strings.Contains(page, `name="csrf" value="`+in.csrf+`"`) {
		t.Fatal("the page's forms do not carry the session's CSRF token")
	}
	action := srv.URL + Path + "/executions/exec-unknown/cancel"
	withCookie := func(h http.Header) http.Header {
		h.Set("Cookie", c.String())
		return h
	}
	for _, tc := range []struct {
		name   string
		header http.Header
		form   url.Values
		want   int
	}{
		{"no CSRF token", withCookie(http.Header{}), url.Values{}, http.StatusForbidden},
		{"a forged CSRF token", withCookie(http.Header{}), url.Values{"csrf": {"forged"}}, http.StatusForbidden},
		{"another site's Origin", withCookie(http.Header{"Origin": {"https://evil.example"}}), url.Values{"csrf": {in.csrf}}, http.StatusForbidden},
		{"a cross-site fetch without Origin", withCookie(http.Header{"Sec-Fetch-Site": {"cross-site"}}), url.Values{"csrf": {in.csrf}}, http.StatusForbidden},
		{"the console's own form", withCookie(http.Header{"Sec-Fetch-Site": {"same-origin"}}), url.Values{"csrf": {in.csrf}}, http.StatusSeeOther},
		{"an operator's bearer token needs no form token", bearerHeader(operatorToken), url.Values{}, http.StatusSeeOther},
		{"a client's bearer token", bearerHeader(clientToken), url.Values{}, http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := do(t, http.MethodPost, action, tc.header, tc.form)
			if res.StatusCode != tc.want {
				t.Errorf("%s, want %d", res.Status, tc.want)
			}
			if tc.want == http.StatusSeeOther && !strings.Contains(res.Header.Get("Location"), "exec-unknown") {
				t.Errorf("redirected to %q, want the action's outcome", res.Header.Get("Location"))
			}
		})
	}
}

// TestAListenerWithoutAuthenticationIsItsUsersConsole: a loopback listener
// without tokens has one user, who gets in and acts with a form token.
func TestAListenerWithoutAuthenticationIsItsUsersConsole(t *testing.T) {
	srv, _ := newConsole(t, true)
	if res := do(t, http.MethodGet, srv.URL+Path, nil, nil); res.StatusCode != http.StatusOK {
		t.Fatalf("GET: %s", res.Status)
	}
	if res := do(t, http.MethodPost, srv.URL+Path+"/sessions/sess-x/close", nil, url.Values{}); res.StatusCode != http.StatusForbidden {
		t.Errorf("an action without the form token: %s", res.Status)
	}
}

// TestEventsStreamTheLiveView: /console/events sends the live part of the
// page as a server-sent event, one data line per line.
func TestEventsStreamTheLiveView(t *testing.T) {
	srv, _ := newConsole(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+Path+"/events", nil)
	req.Header.Set("Authorization", "Bearer "+operatorToken)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("content type %q", ct)
	}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var event string
	var data []string
	for sc.Scan() {
		line := sc.Text()
		if line == "" && event != "" {
			break
		}
		if v, ok := strings.CutPrefix(line, "event: "); ok {
			event = v
		} else if v, ok := strings.CutPrefix(line, "data: "); ok {
			data = append(data, v)
		}
	}
	html := strings.Join(data, "\n")
	if event != "live" || !strings.Contains(html, `id="sessions"`) || !strings.Contains(html, "run_code") {
		t.Errorf("event %q: %.300s", event, html)
	}
}

// TestEverythingShownIsEscaped: values that come from outside (principal
// names, hosts a program asked for, build details, a reflected message)
// are text in the page, never markup.
func TestEverythingShownIsEscaped(t *testing.T) {
	const evil = `<script>alert(1)</script><img src=x onerror=alert(2)>`
	now := time.Now()
	code := 1
	v := view{
		Principal: evil, CSRF: `"><script>`, Done: evil, At: now,
		Sessions:  []sessions.Info{{SessionID: evil, Owner: evil, Language: evil, Isolation: evil, Network: evil, Secrets: []string{evil}, CreatedAt: now}},
		Paused:    []sessions.Info{{SessionID: evil, Owner: evil, Language: evil, Paused: true}},
		Running:   []executions.Snapshot{{ExecutionID: evil, Owner: evil, Language: evil, Stage: evil, Status: "running"}},
		Ended:     []executions.Snapshot{{ExecutionID: evil, Owner: evil, Status: evil, Result: &engine.Result{}}},
		Inflight:  []engine.RunInfo{{RunID: evil, Owner: evil, Language: evil}},
		Images:    []imageRow{{Image: evil, State: evil, Detail: evil, Languages: []string{evil}}},
		Approvals: []approval.Grant{{Owner: evil, Host: evil}},
		Questions: []approval.Question{{Owner: evil, Host: evil, RunID: evil}},
		AuditOn:   true,
		Audit:     []audit.Entry{{Principal: evil, Tool: evil, Event: evil, Error: evil, ExitCode: &code, Egress: &egress.Connection{Host: evil}}},
	}
	for _, name := range []string{"console.html", "live"} {
		out, err := render(name, v)
		if err != nil {
			t.Fatal(err)
		}
		page := string(out)
		if strings.Contains(page, "<script>alert") || strings.Contains(page, "<img src=x") || strings.Contains(page, `"><script>`) {
			t.Errorf("%s lets markup through:\n%s", name, page)
		}
		if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("%s does not show the text escaped", name)
		}
	}
}

func TestMemoryShowsASandboxsUseAgainstTheLimitWhereTheBackendReadsIt(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct {
		name  string
		bytes uint64
		want  string
	}{
		{"read from the host's cgroup", 38<<20 + 1, "39 MiB / 256 MiB"},
		{"not readable here (a pod, a remote daemon)", 0, "≤ 256 MiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := view{At: now, MemoryMB: 256, Sessions: []sessions.Info{{SessionID: "s1", CreatedAt: now, MemoryBytes: tc.bytes}},
				Running: []executions.Snapshot{{ExecutionID: "x1", Status: "running", StartedAt: now, MemoryBytes: tc.bytes}}}
			out, err := render("live", v)
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(out), "<td>"+tc.want+"</td>"); n != 2 {
				t.Errorf("the session's and the execution's memory are shown as %q %d times, want 2:\n%s", tc.want, n, out)
			}
		})
	}
}
