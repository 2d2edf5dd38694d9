package egress

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestAnApprovedHostIsReachedAndAnApprovableOneIsReported: a host off the
// list that the operator marked approvable is denied and reported as
// approvable until the principal approves it; once approved it is reached
// (as a private host when the operator named its port), and the
// connection says so; a host the operator did not mark stays denied and
// unreported.
func TestAnApprovedHostIsReachedAndAnApprovableOneIsReported(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "approved says hi")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	var mu sync.Mutex
	approved := false
	conns := make(chan Connection, 16)
	hook := func(host string, p int, _ bool) Approval {
		mu.Lock()
		defer mu.Unlock()
		if host != "api.approve.test" || fmt.Sprint(p) != port {
			return Approval{}
		}
		return Approval{Approvable: true, Approved: approved, Private: true}
	}
	px := New(Policy{Tier: TierPackages, Hosts: []string{"registry.example"}}, Options{
		Resolver:     &fakeResolver{table: map[string]string{"api.approve.test": "127.0.0.1"}},
		Approval:     hook,
		OnConnection: func(c Connection) { conns <- c },
	})
	dial := serveOnSocket(t, px)
	get := func(host string) (int, string) {
		c := dial()
		fmt.Fprintf(c, "GET http://%s:%s/ HTTP/1.1\r\nHost: %s\r\n\r\n", host, port, host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}

	code, body := get("api.approve.test")
	if code != http.StatusForbidden || !strings.Contains(body, "the operator lets a user approve it") {
		t.Fatalf("before the approval: %d %q, want 403 saying it may be approved", code, body)
	}
	if code, _ := get("evil.test"); code != http.StatusForbidden {
		t.Fatalf("a host the operator did not mark: %d, want 403", code)
	}
	if got := px.Report().Approvable; !reflect.DeepEqual(got, []string{"api.approve.test"}) {
		t.Fatalf("approvable %v, want only the marked host", got)
	}

	mu.Lock()
	approved = true
	mu.Unlock()
	code, body = get("api.approve.test")
	if code != http.StatusOK || body != "approved says hi" {
		t.Fatalf("after the approval: %d %q, want the server's answer", code, body)
	}
	// A connection is reported as it ends, which may come a moment after
	// the answer was read: wait for the allowed one.
	timeout := time.After(30 * time.Second)
	for {
		select {
		case c := <-conns:
			if c.Host == "api.approve.test" && c.Allowed {
				if !c.Approved {
					t.Fatalf("the connection %+v should say it was reached on an approval", c)
				}
				return
			}
		case <-timeout:
			t.Fatal("the approved connection was never reported")
		}
	}
}
