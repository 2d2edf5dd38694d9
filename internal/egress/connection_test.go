package egress

import (
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestEveryConnectionIsReportedWithItsDestinationDecisionAndBytes: the
// proxy's OnConnection hears of a tunnel that was allowed (with the bytes
// it carried both ways) and of one that was denied (with the reason), once
// each, after they end.
func TestEveryConnectionIsReportedWithItsDestinationDecisionAndBytes(t *testing.T) {
	srv, port := tlsMirror(t)
	r := &fakeResolver{table: map[string]string{"example.com": "127.0.0.1"}}
	var mu sync.Mutex
	var got []Connection
	px := New(Policy{Tier: TierPackages, Private: []string{"example.com:" + port}}, Options{Resolver: r, OnConnection: func(c Connection) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, c)
	}})
	dial := serveOnSocket(t, px)

	c := dial()
	if code, _ := connect(t, c, "example.com:"+port); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	if body, err := io.ReadAll(tc); err != nil || !strings.Contains(string(body), "mirror says hi") {
		t.Fatalf("through the tunnel: %q %v", body, err)
	}
	c.Close()
	if code, _ := connect(t, dial(), "exfil.invalid:443"); code != http.StatusForbidden {
		t.Fatalf("CONNECT to a host off the list: %d", code)
	}

	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(got)
		mu.Unlock()
		if n >= 2 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("reported %+v, want two connections", got)
	}
	byHost := map[string]Connection{}
	for _, c := range got {
		byHost[c.Host] = c
	}
	allowed, denied := byHost["example.com"], byHost["exfil.invalid"]
	if !allowed.Allowed || allowed.Port == 0 || allowed.Method != "CONNECT" || allowed.Bytes < 100 || allowed.Reason != "" {
		t.Errorf("the allowed tunnel: %+v", allowed)
	}
	if denied.Allowed || denied.Port != 443 || denied.Reason == "" || denied.Bytes != 0 {
		t.Errorf("the denied tunnel: %+v", denied)
	}
}
