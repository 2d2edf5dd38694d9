//go:build !fast

package server

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestAServersShutdownRemovesItsOwnSandboxesAndLeavesTheOtherServersOfItsProcess
// runs two servers in one process on one Docker backend, each holding
// sandboxes (a warm pool, or a live session's), and shuts one down: its
// sandboxes are all gone, the other's are all still there and the other
// still runs code; then the other's shutdown leaves none of its own.
func TestAServersShutdownRemovesItsOwnSandboxesAndLeavesTheOtherServersOfItsProcess(t *testing.T) {
	backend := testutil.Backend(t)
	reg := languages.Builtin()
	for _, lang := range []string{"bash", "python"} {
		testutil.RequireImage(t, backend, reg, lang)
	}
	for _, c := range []struct {
		name string
		// pool is the bash pool each server keeps; session opens a python
		// session on each.
		pool    int
		session bool
	}{
		{name: "warm pool sandboxes", pool: 2},
		{name: "a live session's sandbox", session: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := config.Default()
			testutil.Unhurried(&cfg)
			cfg.Pool.Size, cfg.Pool.Sizes = 0, nil
			if c.pool > 0 {
				// Of a fixed size: a pool that grows for a run that waited
				// holds more until it shrinks.
				cfg.Pool.Sizes = []string{"bash=" + strconv.Itoa(c.pool)}
				cfg.Pool.MaxSizes = cfg.Pool.Sizes
			}
			first, second := startOn(t, cfg, reg, backend), startOn(t, cfg, reg, backend)
			for _, s := range []*running{first, second} {
				if c.session {
					s.call(t, "create_session", map[string]any{"language": "python"})
				}
				s.call(t, "run_code", map[string]any{"language": "bash", "code": "echo before"})
			}
			// Each holds its full pool, or its session's sandbox, once the
			// sandboxes of the runs above are removed.
			want := max(c.pool, 1)
			for _, s := range []*running{first, second} {
				testutil.Eventually(t, time.Minute, func() bool {
					return poolSettled(s.Engine().PoolStats(), "bash", c.pool) && len(sandboxesOf(t, backend.Client(), s.instance)) == want
				}, "each server to hold its sandboxes and no more")
			}
			kept := sandboxesOf(t, backend.Client(), second.instance)

			first.shutdown(t)
			if left := sandboxesOf(t, backend.Client(), first.instance); len(left) > 0 {
				t.Errorf("the shut-down server left its sandboxes %v", left)
			}
			now := sandboxesOf(t, backend.Client(), second.instance)
			for _, id := range kept {
				if !slices.Contains(now, id) {
					t.Errorf("the other server's sandbox %s was removed by the first one's shutdown (it holds %v)", id[:12], now)
				}
			}
			if out := second.call(t, "run_code", map[string]any{"language": "bash", "code": "echo after"}); !strings.Contains(out, "after") {
				t.Errorf("the other server's run after the first one's shutdown printed %q", out)
			}

			second.shutdown(t)
			if left := sandboxesOf(t, backend.Client(), second.instance); len(left) > 0 {
				t.Errorf("the second server left its sandboxes %v", left)
			}
		})
	}
}

// poolSettled reports whether lang's pool holds n idle sandboxes with none
// being made or removed.
func poolSettled(stats []pool.Stat, lang string, n int) bool {
	for _, st := range stats {
		if st.Language == lang {
			return st.Idle == n && st.Creating == 0 && st.Removing == 0
		}
	}
	return n == 0
}

// running is a started server with an MCP client.
type running struct {
	*Server
	cancel  context.CancelFunc
	started bool
	cs      *mcp.ClientSession
}

// startOn starts a server on backend, listening on a loopback port of its
// own, and connects a client to it.
func startOn(t *testing.T, cfg config.Config, reg *languages.Registry, backend *docker.Backend) *running {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	srv := New(Parts{Config: cfg, Registry: reg, Backend: backend, BackendChoice: "docker"},
		Options{HTTPAddr: "127.0.0.1:0", Version: "test"})
	r := &running{Server: srv, cancel: cancel}
	t.Cleanup(func() { r.shutdown(t) })
	if err := srv.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
	r.started = true
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL(), DisableStandaloneSSE: true}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", srv.URL(), err)
	}
	r.cs = cs
	return r
}

// call calls tool and returns its stdout, failing the test on an error.
func (r *running) call(t *testing.T, tool string, args map[string]any) string {
	t.Helper()
	res, err := r.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("%s: %v %+v", tool, err, res)
	}
	out, _ := res.StructuredContent.(map[string]any)["stdout"].(string)
	return out
}

// shutdown ends the server's serving and shuts it down, once.
func (r *running) shutdown(t *testing.T) {
	t.Helper()
	if r.cancel == nil {
		return
	}
	if r.cs != nil {
		_ = r.cs.Close()
	}
	r.cancel()
	r.cancel = nil
	if r.started {
		if err := r.Wait(); err != nil {
			t.Errorf("wait: %v", err)
		}
	}
	r.Shutdown()
}

// sandboxesOf lists the IDs of the containers made for a server instance.
func sandboxesOf(t *testing.T, cli *client.Client, instance string) []string {
	t.Helper()
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", docker.LabelInstance+"="+instance),
	})
	if err != nil {
		t.Fatalf("listing containers: %v", err)
	}
	ids := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids
}
