package egress

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

const secretValue = "s3cret-value-that-must-stay-outside"

// secretAPI is an HTTPS server on loopback (httptest's certificate is for
// example.com) that records the Authorization header of every request.
type secretAPI struct {
	srv  *httptest.Server
	port string
	mu   sync.Mutex
	seen []string
}

func newSecretAPI(t *testing.T, tlsServer bool) *secretAPI {
	a := &secretAPI{}
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.seen = append(a.seen, r.Header.Get("Authorization"))
		a.mu.Unlock()
		_, _ = io.WriteString(w, "api says hi")
	})
	if tlsServer {
		a.srv = httptest.NewTLSServer(h)
	} else {
		a.srv = httptest.NewServer(h)
	}
	t.Cleanup(a.srv.Close)
	_, a.port, _ = net.SplitHostPort(a.srv.Listener.Addr().String())
	return a
}

func (a *secretAPI) headers() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.seen...)
}

func apiSecret() Secret {
	return Secret{Name: "api", Hosts: []string{"example.com"}, Header: "Authorization", Format: "Bearer {value}", Value: secretValue}
}

// startSecretProxy serves a proxy with the api secret, a CA and a log kept
// in logs.
func startSecretProxy(t *testing.T, api *secretAPI, roots *x509.CertPool, logs *bytes.Buffer) (*Proxy, *CA, func() net.Conn) {
	t.Helper()
	ca, err := NewCA(time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeResolver{table: map[string]string{"example.com": "127.0.0.1"}}
	px := New(Policy{Tier: TierAllowlist, Private: []string{"example.com:" + api.port}, Secrets: []Secret{apiSecret()}},
		Options{Resolver: r, CA: ca, UpstreamRoots: roots, Logger: slog.New(slog.NewTextHandler(logs, nil))})
	return px, ca, serveOnSocket(t, px)
}

// getThroughTunnel sends one GET with the placeholder through a CONNECT
// tunnel, trusting roots, and returns the whole answer.
func getThroughTunnel(t *testing.T, c net.Conn, port string, roots *x509.CertPool) (string, error) {
	t.Helper()
	if code, _ := connect(t, c, "example.com:"+port); code != http.StatusOK {
		t.Fatalf("CONNECT: %d", code)
	}
	tc := tls.Client(c, &tls.Config{ServerName: "example.com", RootCAs: roots})
	fmt.Fprintf(tc, "GET /v1/me HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n", Placeholder("api"))
	answer, err := io.ReadAll(tc)
	return string(answer), err
}

// TestASecretReachesItsHostWhileTheSandboxHoldsOnlyThePlaceholder: the
// sandbox sends the placeholder through a tunnel to the bound host, trusting
// the proxy's CA; the host receives the real header, and neither the answer
// the sandbox reads, the proxy's report nor its log holds the value.
func TestASecretReachesItsHostWhileTheSandboxHoldsOnlyThePlaceholder(t *testing.T) {
	api := newSecretAPI(t, true)
	var logs bytes.Buffer
	px, ca, dial := startSecretProxy(t, api, api.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, &logs)
	sandboxRoots := x509.NewCertPool()
	sandboxRoots.AppendCertsFromPEM(ca.CertPEM())
	answer, err := getThroughTunnel(t, dial(), api.port, sandboxRoots)
	if err != nil || !strings.HasPrefix(answer, "HTTP/1.1 200") || !strings.Contains(answer, "api says hi") {
		t.Fatalf("through the proxy: %q %v", answer, err)
	}
	if got := api.headers(); len(got) != 1 || got[0] != "Bearer "+secretValue {
		t.Fatalf("the API received Authorization %q, want the secret", got)
	}
	report := fmt.Sprintf("%+v", px.Report())
	for what, text := range map[string]string{"the answer": answer, "the report": report, "the log": logs.String()} {
		if strings.Contains(text, secretValue) {
			t.Errorf("%s holds the secret: %s", what, text)
		}
	}
	if !strings.Contains(logs.String(), "secret=api") {
		t.Errorf("the log does not name the secret used: %s", logs.String())
	}
}

// TestTheSecretGoesOnlyWhereItIsBoundOverVerifiedTLS: a host whose
// certificate the proxy cannot verify gets no request at all; plain HTTP to
// the bound host carries the placeholder untouched; a sandbox that does not
// trust the proxy's CA cannot complete the handshake.
func TestTheSecretGoesOnlyWhereItIsBoundOverVerifiedTLS(t *testing.T) {
	t.Run("an upstream whose certificate is not trusted", func(t *testing.T) {
		api := newSecretAPI(t, true)
		var logs bytes.Buffer
		_, ca, dial := startSecretProxy(t, api, x509.NewCertPool(), &logs)
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca.CertPEM())
		answer, _ := getThroughTunnel(t, dial(), api.port, roots)
		if !strings.HasPrefix(answer, "HTTP/1.1 502") || len(api.headers()) != 0 {
			t.Fatalf("answer %q, API saw %q; want 502 and no request", answer, api.headers())
		}
	})
	t.Run("plain HTTP to the bound host", func(t *testing.T) {
		api := newSecretAPI(t, false)
		var logs bytes.Buffer
		_, _, dial := startSecretProxy(t, api, nil, &logs)
		c := dial()
		fmt.Fprintf(c, "GET http://example.com:%s/ HTTP/1.1\r\nHost: example.com\r\nAuthorization: Bearer %s\r\n\r\n", api.port, Placeholder("api"))
		if answer, _ := io.ReadAll(c); !strings.Contains(string(answer), "api says hi") {
			t.Fatalf("answer %q", answer)
		}
		if got := api.headers(); len(got) != 1 || got[0] != "Bearer "+Placeholder("api") {
			t.Fatalf("the API received %q over plain HTTP, want the placeholder", got)
		}
	})
	t.Run("a sandbox that does not trust the proxy's CA", func(t *testing.T) {
		api := newSecretAPI(t, true)
		var logs bytes.Buffer
		_, _, dial := startSecretProxy(t, api, api.srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs, &logs)
		if _, err := getThroughTunnel(t, dial(), api.port, x509.NewCertPool()); err == nil || len(api.headers()) != 0 {
			t.Fatalf("handshake error %v, API saw %q; want a failed handshake and no request", err, api.headers())
		}
	})
}

// TestAPolicyNamesTheHostsOfASecret: a secret's host is reached when the
// policy lists it, covers it with a pattern or names it as a private host;
// a secret's pattern needs a pattern covering all of it.
func TestAPolicyNamesTheHostsOfASecret(t *testing.T) {
	p := Policy{Hosts: []string{"api.example.com", "*.cdn.example"}, Private: []string{"mirror.internal:8443", "10.0.0.5"}}
	cases := []struct {
		host string
		want bool
	}{
		{"api.example.com", true},
		{"API.example.com.", true},
		{"x.cdn.example", true},
		{"*.cdn.example", true},
		{"*.a.cdn.example", true},
		{"mirror.internal", true},
		{"10.0.0.5", true},
		{"other.example.com", false},
		{"*.example.com", false},
		{"cdn.example", false},
	}
	for _, c := range cases {
		if got := p.Names(c.host); got != c.want {
			t.Errorf("Names(%q) = %v, want %v", c.host, got, c.want)
		}
	}
}

// TestTheProxyWritesASecretIntoItsHeaderWholeOrWhereThePlaceholderStands:
// through a real tunnel to a bound host, the placeholder inside the bound
// header's value gives way to the value alone (the sandbox's own scheme
// stays), a header that is the placeholder alone, holds none or is absent
// becomes the operator's format, two secrets bound to one host each go
// into their own header, and a placeholder in a header the secret is not
// bound to stays the placeholder.
func TestTheProxyWritesASecretIntoItsHeaderWholeOrWhereThePlaceholderStands(t *testing.T) {
	ph, key := Placeholder("api"), Placeholder("key")
	keySecret := Secret{Name: "key", Hosts: []string{"example.com"}, Header: "X-Api-Key", Value: "key-value"}
	cases := []struct {
		name    string
		secrets []Secret
		headers []string // the sandbox's header lines
		want    map[string][]string
	}{
		{"the placeholder inside the value, another scheme", []Secret{apiSecret()},
			[]string{"Authorization: Token " + ph},
			map[string][]string{"Authorization": {"Token " + secretValue}}},
		{"the placeholder inside the value, twice", []Secret{apiSecret()},
			[]string{"Authorization: Basic " + ph + ":" + ph},
			map[string][]string{"Authorization": {"Basic " + secretValue + ":" + secretValue}}},
		{"the placeholder alone takes the operator's format", []Secret{apiSecret()},
			[]string{"Authorization: " + ph},
			map[string][]string{"Authorization": {"Bearer " + secretValue}}},
		{"no header: the operator's format", []Secret{apiSecret()},
			nil,
			map[string][]string{"Authorization": {"Bearer " + secretValue}}},
		{"a header without the placeholder is replaced whole", []Secret{apiSecret()},
			[]string{"Authorization: Bearer made-up"},
			map[string][]string{"Authorization": {"Bearer " + secretValue}}},
		{"a placeholder in a header the secret is not bound to stays", []Secret{apiSecret()},
			[]string{"X-Debug: " + ph},
			map[string][]string{"Authorization": {"Bearer " + secretValue}, "X-Debug": {ph}}},
		{"two secrets on one host, each into its header", []Secret{apiSecret(), keySecret},
			[]string{"Authorization: Token " + ph, "X-Api-Key: k=" + key},
			map[string][]string{"Authorization": {"Token " + secretValue}, "X-Api-Key": {"k=key-value"}}},
		{"another secret's placeholder in this one's header stays", []Secret{apiSecret()},
			[]string{"Authorization: Token " + key},
			map[string][]string{"Authorization": {"Bearer " + secretValue}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var got http.Header
			srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				got = r.Header.Clone()
				mu.Unlock()
				_, _ = io.WriteString(w, "api says hi")
			}))
			t.Cleanup(srv.Close)
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			ca, err := NewCA(time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			var logs bytes.Buffer
			var conns []Connection
			px := New(Policy{Tier: TierAllowlist, Private: []string{"example.com:" + port}, Secrets: c.secrets},
				Options{Resolver: &fakeResolver{table: map[string]string{"example.com": "127.0.0.1"}}, CA: ca,
					UpstreamRoots: srv.Client().Transport.(*http.Transport).TLSClientConfig.RootCAs,
					Logger:        slog.New(slog.NewTextHandler(&logs, nil)),
					OnConnection:  func(cn Connection) { mu.Lock(); conns = append(conns, cn); mu.Unlock() }})
			conn := serveOnSocket(t, px)()
			if code, _ := connect(t, conn, "example.com:"+port); code != http.StatusOK {
				t.Fatalf("CONNECT: %d", code)
			}
			roots := x509.NewCertPool()
			roots.AppendCertsFromPEM(ca.CertPEM())
			tc := tls.Client(conn, &tls.Config{ServerName: "example.com", RootCAs: roots})
			head := "GET / HTTP/1.1\r\nHost: example.com\r\n"
			for _, h := range c.headers {
				head += h + "\r\n"
			}
			fmt.Fprint(tc, head+"Connection: close\r\n\r\n")
			answer, err := io.ReadAll(tc)
			if err != nil || !strings.Contains(string(answer), "api says hi") {
				t.Fatalf("through the proxy: %q %v", answer, err)
			}
			mu.Lock()
			defer mu.Unlock()
			for k, want := range c.want {
				if v := got.Values(k); strings.Join(v, "\n") != strings.Join(want, "\n") {
					t.Errorf("the API received %s %q, want %q", k, v, want)
				}
			}
			for _, text := range []string{string(answer), logs.String(), fmt.Sprintf("%+v", conns)} {
				if strings.Contains(text, secretValue) || strings.Contains(text, "key-value") {
					t.Errorf("a value reached the answer, the log or the report: %s", text)
				}
			}
		})
	}
}
