//go:build !fast

package egress_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// egressSeen is what the engine's egress observer heard.
type egressSeen struct {
	mu    sync.Mutex
	owner []string
	conns []egress.Connection
}

func (s *egressSeen) observe(owner, _ string, c egress.Connection) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.owner = append(s.owner, owner)
	s.conns = append(s.conns, c)
}

func (s *egressSeen) find(host string) (egress.Connection, string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, c := range s.conns {
		if c.Host == host {
			return c, s.owner[i], true
		}
	}
	return egress.Connection{}, "", false
}

// TestEveryEgressConnectionOfARunIsObservedWithItsOwner: a program in a
// real sandbox fetches from a loopback server the operator named and tries
// a host off the list; the engine's egress observer (the audit log and the
// metrics in the server) hears of both, with the run's principal, the
// decision, and the bytes of the one that went through.
func TestEveryEgressConnectionOfARunIsObservedWithItsOwner(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, strings.Repeat("x", 5000))
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	cfg := packagesConfig(t)
	cfg.Network.PrivateHosts = []string{"127.0.0.1:" + port}
	g := gate.New(cfg, languages.Builtin(), gate.Options{})
	seen := &egressSeen{}
	g.Observe(seen.observe)
	e, b := testutil.Engine(t, &cfg, engine.WithGate(g))
	requireImages(t, e, "python")
	ctx, cancel := context.WithTimeout(principal.WithContext(context.Background(), principal.Principal{Name: "alice"}), 3*time.Minute)
	defer cancel()

	code := fmt.Sprintf(`import urllib.request
print(len(urllib.request.urlopen("http://127.0.0.1:%s/").read()))
try:
    urllib.request.urlopen("http://exfil.invalid/")
except Exception as e:
    print("denied")
`, port)
	res, err := e.Run(ctx, engine.Request{Language: "python", Network: "packages", Code: code}, engine.RunOptions{})
	if err != nil || res.Status != engine.StatusOK || !strings.Contains(res.Stdout, "5000") || !strings.Contains(res.Stdout, "denied") {
		t.Fatalf("the run: %v %+v", err, res)
	}
	// A connection is reported as it ends, which may come a moment after
	// the program read its answer.
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, _, a := seen.find("127.0.0.1")
		_, _, d := seen.find("exfil.invalid")
		return a && d
	}, "both connections reported")
	allowed, owner, ok := seen.find("127.0.0.1")
	if !ok || owner != "alice" || !allowed.Allowed || allowed.Method != "GET" || allowed.Bytes < 5000 || allowed.Port == 0 {
		t.Errorf("the connection to the operator's host: %+v owned by %q (seen: %v)", allowed, owner, ok)
	}
	denied, owner, ok := seen.find("exfil.invalid")
	if !ok || owner != "alice" || denied.Allowed || denied.Reason == "" || denied.Bytes != 0 {
		t.Errorf("the connection to a host off the list: %+v owned by %q (seen: %v)", denied, owner, ok)
	}
	testutil.NoLeftovers(t, b.Client())
}
