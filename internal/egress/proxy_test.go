package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// fakeResolver answers from a table and records every name it was asked.
type fakeResolver struct {
	mu    sync.Mutex
	table map[string]string
	asked []string
}

func (r *fakeResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	if ip, ok := r.table[host]; ok {
		return []net.IPAddr{{IP: net.ParseIP(ip)}}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func (r *fakeResolver) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.asked...)
}

// startProxy serves p on a Unix socket, as the Docker backend does, and
// returns a dialer to it.
func startProxy(t *testing.T, p Policy, r Resolver) (*Proxy, func() net.Conn) {
	t.Helper()
	px := New(p, Options{Resolver: r})
	return px, serveOnSocket(t, px)
}

// serveOnSocket serves px on a Unix socket and returns a dialer to it.
func serveOnSocket(t *testing.T, px *Proxy) func() net.Conn {
	t.Helper()
	path := filepath.Join(t.TempDir(), "proxy.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = px.Serve(ln) }()
	t.Cleanup(px.Close)
	return func() net.Conn {
		c, err := net.Dial("unix", path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
}

// connect sends a CONNECT and returns the proxy's status code.
func connect(t *testing.T, c net.Conn, target string) (int, *bufio.Reader) {
	t.Helper()
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect}) //nolint:bodyclose // a CONNECT answer has no body: the tunnel is read through br
	if err != nil {
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	return resp.StatusCode, br
}

// tlsMirror is a TLS server on loopback the operator named as a mirror.
func tlsMirror(t *testing.T) (*httptest.Server, string) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "mirror says hi")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return srv, port
}

func TestAHostOffTheListIsDeniedWithoutEverBeingResolved(t *testing.T) {
	r := &fakeResolver{}
	px, dial := startProxy(t, Policy{Tier: TierPackages, Hosts: []string{"registry.example"}}, r)
	for _, target := range []string{"exfil.invalid:443", "c2VjcmV0.exfil.invalid:443", "registry.example.exfil.invalid:443"} {
		if code, _ := connect(t, dial(), target); code != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d, want 403", target, code)
		}
	}
	if got := r.names(); len(got) != 0 {
		t.Errorf("the proxy resolved %v: a denied name must never reach DNS (tunnelling)", got)
	}
	if rep := px.Report(); len(rep.Denied) != 3 || rep.Connections != 3 {
		t.Errorf("report %+v, want 3 denied hosts and 3 connections", rep)
	}
}

func TestTunnelsGoToPort443OnlyAndNeverToIPAddresses(t *testing.T) {
	r := &fakeResolver{}
	_, dial := startProxy(t, Policy{Tier: TierPackages, Hosts: []string{"registry.example"}}, r)
	for _, target := range []string{"registry.example:22", "registry.example:80", "registry.example:8443", "127.0.0.1:443", "[::1]:443", "[2001:db8::1]:443", "169.254.169.254:443"} {
		if code, _ := connect(t, dial(), target); code != http.StatusForbidden {
			t.Errorf("CONNECT %s: %d, want 403", target, code)
		}
	}
	if got := r.names(); len(got) != 0 {
		t.Errorf("resolved %v", got)
	}
}

func TestAnAllowedNameThatResolvesToLoopbackOrPrivateAddressesIsNotDialled(t *testing.T) {
	var hits atomic.Int32 // a listener on loopback that must not be reached
	plain := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { hits.Add(1) }))
	t.Cleanup(plain.Close)
	r := &fakeResolver{table: map[string]string{"registry.example": "127.0.0.1"}}
	px, dial := startProxy(t, Policy{Tier: TierPackages, Hosts: []string{"registry.example"}}, r)
	// Plain HTTP to port 80 of the allowed name: resolved, found loopback, refused.
	c := dial()
	fmt.Fprintf(c, "GET http://registry.example/simple/ HTTP/1.1\r\nHost: registry.example\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusBadGateway {
		t.Fatalf("GET to a name resolving to loopback: %v %v, want 502", resp, err)
	}
	defer resp.Body.Close()
	if hits.Load() != 0 {
		t.Fatal("the loopback listener was reached")
	}
	rep := px.Report()
	if len(rep.Denied) != 1 || !strings.Contains(rep.Denied[0], "loopback") {
		t.Fatalf("denied %v, want the loopback reason", rep.Denied)
	}
}

func TestATunnelWhoseTLSServerNameIsNotItsHostIsCut(t *testing.T) {
	_, port := tlsMirror(t)
	r := &fakeResolver{}
	// The mirror is named by the operator, so loopback is allowed for it.
	px, dial := startProxy(t, Policy{Tier: TierPackages, Private: []string{"localhost:" + port}}, r)
	code, br := connect(t, dial(), "localhost:"+port)
	if code != http.StatusOK {
		t.Fatalf("CONNECT to the named mirror: %d", code)
	}
	_ = br
	// A second tunnel, same host, but the ClientHello names another server.
	c := dial()
	code, _ = connect(t, c, "localhost:"+port)
	if code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "exfil.invalid", InsecureSkipVerify: true})
	if err := tc.Handshake(); err == nil {
		t.Fatal("a TLS handshake naming another server went through the tunnel")
	}
	rep := px.Report()
	found := false
	for _, d := range rep.Denied {
		found = found || strings.Contains(d, "exfil.invalid")
	}
	if !found {
		t.Fatalf("denied %v, want the SNI mismatch", rep.Denied)
	}
}

func TestANamedMirrorOnLoopbackIsReachedWithTheRightServerName(t *testing.T) {
	srv, port := tlsMirror(t)
	// httptest's certificate is for example.com; the fake resolver sends
	// that name to the loopback listener (nothing leaves this machine).
	r := &fakeResolver{table: map[string]string{"example.com": "127.0.0.1"}}
	px, dial := startProxy(t, Policy{Tier: TierPackages, Private: []string{"example.com:" + port}}, r)
	c := dial()
	if code, _ := connect(t, c, "example.com:"+port); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	pool := srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs
	tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: pool})
	fmt.Fprintf(tc, "GET / HTTP/1.1\r\nHost: example.com\r\nConnection: close\r\n\r\n")
	body, err := io.ReadAll(tc)
	if err != nil || !strings.Contains(string(body), "mirror says hi") {
		t.Fatalf("through the tunnel: %q %v", body, err)
	}
	if rep := px.Report(); len(rep.Allowed) != 1 || rep.Bytes == 0 {
		t.Fatalf("report %+v", rep)
	}
}

func TestTheRunsConnectionAndByteCapsHold(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, big) }))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	r := &fakeResolver{table: map[string]string{"mirror.test": "127.0.0.1"}}
	_, dial := startProxy(t, Policy{Tier: TierPackages, Private: []string{"mirror.test:" + port}, MaxBytes: 64 << 10, MaxConnections: 2}, r)
	get := func() (int, int, error) {
		c := dial()
		fmt.Fprintf(c, "GET http://mirror.test:%s/ HTTP/1.1\r\nHost: mirror.test\r\n\r\n", port)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			return 0, 0, err
		}
		defer resp.Body.Close()
		n, _ := io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, int(n), nil
	}
	if _, n, _ := get(); n >= len(big) {
		t.Errorf("read %d bytes through a proxy capped at 64 KiB", n)
	}
	_, _, _ = get()
	if code, _, err := get(); err != nil || code != http.StatusTooManyRequests {
		t.Errorf("third connection with a cap of 2: %d %v, want 429", code, err)
	}
}

func TestHostPatterns(t *testing.T) {
	for _, c := range []struct {
		patterns []string
		host     string
		want     bool
	}{
		{[]string{"pypi.org"}, "pypi.org", true},
		{[]string{"pypi.org"}, "PyPI.org.", true},
		{[]string{"pypi.org"}, "evil-pypi.org", false},
		{[]string{"pypi.org"}, "pypi.org.evil", false},
		{[]string{"*.example.com"}, "a.example.com", true},
		{[]string{"*.example.com"}, "a.b.example.com", true},
		{[]string{"*.example.com"}, "example.com", false},
		{[]string{"*.example.com"}, "aexample.com", false},
		{nil, "pypi.org", false},
	} {
		if got := MatchHost(c.patterns, c.host); got != c.want {
			t.Errorf("MatchHost(%v, %q) = %v, want %v", c.patterns, c.host, got, c.want)
		}
	}
}

func TestAddressesNeverDialledForAHostTheOperatorDidNotName(t *testing.T) {
	for _, c := range []struct {
		ip      string
		blocked bool
	}{
		{"127.0.0.1", true}, {"127.1.2.3", true}, {"::1", true}, {"0.0.0.0", true}, {"::", true},
		{"10.1.2.3", true}, {"172.16.0.1", true}, {"192.168.1.1", true}, {"169.254.169.254", true},
		{"fe80::1", true}, {"fd00::1", true}, {"100.64.0.1", true}, {"198.18.0.1", true},
		{"::ffff:127.0.0.1", true}, {"::ffff:10.0.0.1", true}, {"64:ff9b::a00:1", true}, {"2002:a00:1::", true},
		{"224.0.0.1", true}, {"255.255.255.255", true},
		{"104.16.0.1", false}, {"2606:4700::1", false}, {"203.0.113.80", false},
	} {
		if got := blockedIP(net.ParseIP(c.ip)) != ""; got != c.blocked {
			t.Errorf("blockedIP(%s) blocked=%v, want %v", c.ip, got, c.blocked)
		}
	}
}

func TestPlainHTTPGoesToTheCheckedHostWithItsHostHeaderAndOneRequestOnly(t *testing.T) {
	var seen []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.URL.Path)
		mu.Unlock()
		_, _ = io.WriteString(w, "ok")
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	r := &fakeResolver{table: map[string]string{"mirror.test": "127.0.0.1"}}
	_, dial := startProxy(t, Policy{Tier: TierPackages, Private: []string{"mirror.test:" + port}}, r)
	c := dial()
	// The Host header names another site, and a second request follows on
	// the same connection: neither may reach the server as sent.
	fmt.Fprintf(c, "GET http://mirror.test:%s/first HTTP/1.1\r\nHost: exfil.invalid\r\n\r\n"+
		"GET /second HTTP/1.1\r\nHost: exfil.invalid\r\n\r\n", port)
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%v %v", resp, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != "mirror.test:"+port+" /first" {
		t.Fatalf("the server saw %q, want one request for mirror.test", seen)
	}
}
