package bench

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestServersTimesEachRunningServerInTurnAndPrintsARowEach: two servers
// (on the fake backend) each get their runs, with no failure, and a row
// per language and server; a server that is not there fails the warm-up
// with an error that names it.
func TestServersTimesEachRunningServerInTurnAndPrintsARowEach(t *testing.T) {
	reg := languages.Builtin()
	var urls []string
	for range 2 {
		e, _ := testutil.FakeEngine(t, nil)
		srv := httptest.NewServer(transport.HTTPHandler(mcpserver.New(e, "bench-test", nil), transport.HTTPOptions{MaxBodyBytes: 1 << 20}))
		t.Cleanup(srv.Close)
		urls = append(urls, srv.URL)
	}
	var out strings.Builder
	err := Servers(t.Context(), reg, ServersOptions{URLs: urls, Languages: []string{"bash"}, Runs: 3, Warmup: 1, Out: &out})
	if err != nil {
		t.Fatalf("Servers: %v\n%s", err, out.String())
	}
	for _, u := range urls {
		if !strings.Contains(out.String(), "| bash | "+u+" |") || strings.Count(out.String(), " | 0 |") != 2 {
			t.Errorf("no row of %s without failures in:\n%s", u, out.String())
		}
	}

	gone := httptest.NewServer(nil)
	gone.Close()
	err = Servers(t.Context(), reg, ServersOptions{URLs: []string{gone.URL}, Languages: []string{"bash"}, Runs: 1, Warmup: 1, Out: &out})
	if err == nil || !strings.Contains(err.Error(), gone.URL) {
		t.Errorf("against a server that is gone: %v, want an error naming it", err)
	}
}
