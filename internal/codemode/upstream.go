package codemode

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// upstream is one configured server and this server's client session to
// it, made at its first use and made again after it ended.
type upstream struct {
	name string
	spec config.CodeModeServer
	b    *Broker

	mu     sync.Mutex
	cs     *mcp.ClientSession
	ended  chan struct{} // closed when cs's connection ended
	tools  []*mcp.Tool   // listed on cs, nil until asked
	stderr *tail         // a stdio server's last words
	cmd    *exec.Cmd     // a stdio server's process, the last started
	starts int           // connections made, for the log
}

// passedEnv are the server's environment variables a stdio server
// inherits, besides those its configuration sets: what a program needs to
// find itself (npx, a Python venv) and nothing that could be a credential.
var passedEnv = []string{"PATH", "HOME", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT"}

// session returns the live client session, connecting first when there is
// none or the last one ended (a stdio server that died is started again).
func (u *upstream) session(ctx context.Context) (*mcp.ClientSession, chan struct{}, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		select {
		case <-u.ended:
			u.b.log.Warn("code mode: MCP server ended; connecting again", "server", u.name, "stderr", u.stderr.String())
			_ = u.cs.Close()
			u.cs, u.tools = nil, nil
		default:
			return u.cs, u.ended, nil
		}
	}
	t, err := u.transport()
	if err != nil {
		return nil, nil, err
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "mcp-code-runner", Title: "mcp-code-runner code mode"}, nil)
	cs, err := client.Connect(ctx, t, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to MCP server %q: %v%s", u.name, err, u.stderr.suffix())
	}
	u.starts++
	u.cs, u.ended, u.tools = cs, make(chan struct{}), nil
	go func(ended chan struct{}) {
		_ = cs.Wait()
		close(ended)
	}(u.ended)
	u.b.log.Info("code mode: connected to MCP server", "server", u.name, "connection", u.starts)
	return cs, u.ended, nil
}

// transport is the configured server's: a child process over stdio, or
// Streamable HTTP with the configured headers; the secrets they name are
// read now, on the server, and go nowhere else.
func (u *upstream) transport() (mcp.Transport, error) {
	expand := func(v string) (string, error) {
		out, err := config.Expand(v, u.b.secret, u.b.getenv)
		if err != nil {
			return "", fmt.Errorf("MCP server %q: %v", u.name, err)
		}
		return out, nil
	}
	if u.spec.Stdio() {
		cmd := exec.Command(u.spec.Command, u.spec.Args...)
		cmd.Dir = u.spec.Cwd
		for _, k := range passedEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		keys := make([]string, 0, len(u.spec.Env))
		for k := range u.spec.Env {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			v, err := expand(u.spec.Env[k])
			if err != nil {
				return nil, err
			}
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		u.stderr = &tail{}
		cmd.Stderr = u.stderr
		u.cmd = cmd
		return &mcp.CommandTransport{Command: cmd, TerminateDuration: 2 * time.Second}, nil
	}
	headers := http.Header{}
	for k, v := range u.spec.Headers {
		val, err := expand(v)
		if err != nil {
			return nil, err
		}
		headers.Set(k, val)
	}
	return &mcp.StreamableClientTransport{Endpoint: u.spec.URL, DisableStandaloneSSE: true, MaxRetries: -1,
		HTTPClient: &http.Client{Transport: headerTransport{base: http.DefaultTransport, headers: headers}}}, nil
}

// listTools lists the server's tools once per connection.
func (u *upstream) listTools(ctx context.Context) ([]*mcp.Tool, error) {
	cs, _, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	u.mu.Lock()
	tools := u.tools
	u.mu.Unlock()
	if tools != nil {
		return tools, nil
	}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("listing the tools of MCP server %q: %v", u.name, err)
		}
		tools = append(tools, t)
	}
	if tools == nil {
		tools = []*mcp.Tool{}
	}
	u.mu.Lock()
	if u.cs == cs {
		u.tools = tools
	}
	u.mu.Unlock()
	return tools, nil
}

// call makes one tool call. A server that ended during it is reported as
// such and connected to again at the next call: the call itself is not
// made twice, since a tool may have acted before it died.
func (u *upstream) call(ctx context.Context, tool string, args json.RawMessage) (*mcp.CallToolResult, error) {
	cs, ended, err := u.session(ctx)
	if err != nil {
		return nil, err
	}
	params := &mcp.CallToolParams{Name: tool}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := cs.CallTool(ctx, params)
	if err == nil {
		return res, nil
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	select {
	case <-ended:
	case <-time.After(100 * time.Millisecond):
		// The connection's end may trail the failed call by a moment.
	}
	select {
	case <-ended:
		return nil, fmt.Errorf("MCP server %q ended during the call of %s%s; it is started again for the next call", u.name, tool, u.stderr.suffix())
	default:
	}
	return nil, fmt.Errorf("MCP server %q: %s: %v", u.name, tool, err)
}

func (u *upstream) close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.cs != nil {
		_ = u.cs.Close()
		u.cs = nil
	}
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers http.Header
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	maps.Copy(r.Header, t.headers)
	return t.base.RoundTrip(r)
}

// tailBytes is how much of a stdio server's standard error is kept.
const tailBytes = 2048

// tail keeps the last tailBytes written to it.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > tailBytes {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-tailBytes:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	if t == nil {
		return ""
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.TrimSpace(string(t.buf))
}

// suffix is the tail for an error message: its last line, if any.
func (t *tail) suffix() string {
	s := t.String()
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	return " (its standard error ends: " + s + ")"
}
