package bench

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testserver"
)

// TestServersTimesEachRunningServerInTurnAndPrintsARowEach: two servers
// (on one fake backend) each get their runs, with no failure, and a row
// per language and server; a server that is not there fails the warm-up
// with an error that names it.
func TestServersTimesEachRunningServerInTurnAndPrintsARowEach(t *testing.T) {
	reg := languages.Builtin()
	cfg := config.Default()
	testutil.Unhurried(&cfg)
	backend := testutil.FakeBackend(t)
	var urls []string
	for range 2 {
		urls = append(urls, testserver.Start(t, server.Parts{Config: cfg, Registry: reg, Backend: backend}, server.Options{}).URL())
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
