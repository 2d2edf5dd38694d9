//go:build !fast

package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// loopbackResolver answers every name with the host's loopback, where the
// test's own server listens.
type loopbackResolver struct{}

func (loopbackResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// TestADeniedApprovableHostIsAskedForThroughTheClient: a Python program in
// a real sandbox fetches from a loopback server under a name the operator
// marked approvable. A client that elicits and accepts gets the run retried
// and reaching the server, and its next run within the TTL is not asked
// again; a client that declines, and one that cannot elicit, get the
// denial. In both protocol eras: 2025-11-25 in memory, where the server
// sends elicitation/create; 2026-07-28 over stateless Streamable HTTP, where
// the result carries input requests and the client calls again with the
// answers.
func TestADeniedApprovableHostIsAskedForThroughTheClient(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "approved-api-says-hi")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierPackages
	cfg.Packages.CacheDir = t.TempDir()
	cfg.Pool.Sizes = nil
	cfg.Network.ApprovableHosts = []string{"api.approve.test:" + port}
	testutil.Unhurried(&cfg)
	code := fmt.Sprintf(`import urllib.request
try:
    print(urllib.request.urlopen("http://api.approve.test:%s/").read().decode())
except Exception as e:
    print("DENIED", e)
`, port)
	args := map[string]any{"language": "python", "network": "packages", "code": code}

	for _, era := range eras {
		t.Run(era, func(t *testing.T) { approvalScenarios(t, &cfg, era, args) })
	}
}

func approvalScenarios(t *testing.T, cfg *config.Config, era string, args map[string]any) {
	call := func(t *testing.T, eng *engine.Engine, answer string) (string, int) {
		t.Helper()
		var asked atomic.Int32
		var opts *mcp.ClientOptions
		if answer != "" {
			opts = &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
				asked.Add(1)
				// The operator's console lists the question while the user
				// is asked.
				if q, _ := approval.New(eng.Store(), time.Hour, nil).Pending(ctx); len(q) != 1 || !strings.HasPrefix(q[0].Host, "api.approve.test") || q[0].Owner == "" {
					t.Errorf("while the user is asked, the pending questions are %+v", q)
				}
				if !strings.Contains(req.Params.Message, "api.approve.test") {
					t.Errorf("the question %q does not name the host", req.Params.Message)
				}
				if answer == "accept" {
					return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"allow": true}}, nil
				}
				return &mcp.ElicitResult{Action: answer}, nil
			}}
		}
		cs := connectApprovalEra(t, eng, era, opts)
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "run_code", Arguments: args})
		if q, _ := approval.New(eng.Store(), time.Hour, nil).Pending(ctx); len(q) != 0 {
			t.Errorf("after the call, questions are still pending: %+v", q)
		}
		if err != nil || res.IsError {
			t.Fatalf("run_code: %v %+v %s", err, res, func() string {
				if res != nil && len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						return tc.Text
					}
				}
				return ""
			}())
		}
		var out engine.Result
		data, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text + "\n"
			}
		}
		return out.Stdout + "\n" + text, int(asked.Load())
	}

	t.Run("a client that cannot elicit gets the denial", func(t *testing.T) {
		eng, b := approvalEngine(t, cfg)
		testutil.RequireImage(t, b, languages.Builtin(), "python")
		t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
		out, _ := call(t, eng, "")
		if !strings.Contains(out, "DENIED") || strings.Contains(out, "approved-api-says-hi") {
			t.Fatalf("output %q, want the denial", out)
		}
	})
	t.Run("a user who declines keeps the denial", func(t *testing.T) {
		eng, b := approvalEngine(t, cfg)
		t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
		out, asked := call(t, eng, "decline")
		if asked != 1 || !strings.Contains(out, "DENIED") || strings.Contains(out, "approved-api-says-hi") {
			t.Fatalf("asked %d times, output %q: want one question and the denial", asked, out)
		}
	})
	t.Run("a user who approves gets the run retried, and is not asked again within the TTL", func(t *testing.T) {
		eng, b := approvalEngine(t, cfg)
		t.Cleanup(func() { testutil.NoLeftovers(t, b.Client()) })
		out, asked := call(t, eng, "accept")
		if asked != 1 || !strings.Contains(out, "approved-api-says-hi") || !strings.Contains(out, "retried after the approval") {
			t.Fatalf("asked %d times, output %q: want one question and the retried run reaching the server", asked, out)
		}
		out, asked = call(t, eng, "decline")
		if asked != 0 || !strings.Contains(out, "approved-api-says-hi") || strings.Contains(out, "retried") {
			t.Fatalf("second run: asked %d times, output %q: want no question and the server reached", asked, out)
		}
	})
}

// connectApprovalEra connects a client on protocol era: 2025-11-25 in
// memory, where the server asks the client's user with elicitation/create;
// 2026-07-28 over stateless Streamable HTTP, where the server cannot send
// requests and asks with input requests in its result.
func connectApprovalEra(t *testing.T, eng *engine.Engine, era string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx := context.Background()
	if era != "2025-11-25" {
		srv := httptest.NewServer(transport.HTTPHandler(mcpserver.New(eng, "test", nil), transport.HTTPOptions{MaxBodyBytes: 1 << 20}))
		t.Cleanup(srv.Close)
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: srv.URL, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: era})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if got := cs.InitializeResult().ProtocolVersion; got != era {
			t.Fatalf("asked for protocol %s, agreed on %s", era, got)
		}
		return cs
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := mcpserver.New(eng, "test", nil).Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test-client", Version: "1"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Close() })
	return cs
}

// approvalEngine is an engine whose egress proxies resolve every name to
// loopback, keeping the approvals in the state store the MCP surface
// writes them to.
func approvalEngine(t *testing.T, cfg *config.Config) (*engine.Engine, *docker.Backend) {
	st := store.NewMemory()
	g := gate.New(*cfg, languages.Builtin(), gate.Options{Store: st, Resolver: loopbackResolver{}})
	return testbackend.Engine(t, cfg, engine.WithStore(st), engine.WithGate(g))
}
