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
