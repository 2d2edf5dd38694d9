package egress

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Secret is a credential the proxy writes into the requests a sandbox sends
// to the hosts it is bound to, over HTTPS: the sandbox holds only
// Placeholder(Name), so the value never enters it.
type Secret struct {
	// Name is what a run asks for.
	Name string
	// Hosts are the names the secret is sent to, in the syntax of
	// Policy.Hosts; a tunnel to one of them is terminated by the proxy.
	Hosts []string
	// Header is the request header the proxy sets, e.g. Authorization.
	Header string
	// Format is the header's value, with {value} standing for the secret,
	// e.g. "Bearer {value}"; empty means the value alone.
	Format string
	// Value is the secret itself, read by the operator's configuration
	// from an environment variable or a file.
	Value string
}

// Placeholder is what a sandbox sees in place of the secret called name.
func Placeholder(name string) string { return "mcr-secret-placeholder:" + name }

// headerValue is the header's value with the secret in place.
func (s Secret) headerValue() string {
	if s.Format == "" {
		return s.Value
	}
	return strings.ReplaceAll(s.Format, "{value}", s.Value)
}

// apply writes s into h, its header: where the sandbox wrote the
// placeholder inside a value of it (Authorization: Bearer <placeholder>),
// the placeholder gives way to the value and the rest stays the
// sandbox's; a header that is the placeholder alone, holds none or is
// absent becomes the operator's format with the value. The value goes
// into s's header only, never another one the sandbox names: the
// operator bound it to that header.
func (s Secret) apply(h http.Header) {
	ph := Placeholder(s.Name)
	vals := h.Values(s.Header)
	inside := false
	for _, v := range vals {
		inside = inside || v != ph && strings.Contains(v, ph)
	}
	if !inside {
		h.Set(s.Header, s.headerValue())
		return
	}
	out := make([]string, len(vals))
	for i, v := range vals {
		if v == ph {
			out[i] = s.headerValue()
		} else {
			out[i] = strings.ReplaceAll(v, ph, s.Value)
		}
	}
	h[http.CanonicalHeaderKey(s.Header)] = out
}

// secretsFor returns the secrets bound to host, in the policy's order.
func (p *Proxy) secretsFor(host string) []Secret {
	var out []Secret
	for _, s := range p.policy.Secrets {
		if MatchHost(s.Hosts, host) {
			out = append(out, s)
		}
	}
	return out
}

// CA issues the certificates with which the proxy terminates the tunnels to
// hosts that secrets are bound to. Each server makes its own; only the
// sandboxes of that server trust it (CertPEM goes into their trust store).
type CA struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	leafKey *ecdsa.PrivateKey
	certPEM []byte

	mu     sync.Mutex
	leaves map[string]*tls.Certificate
}

// NewCA makes a certificate authority valid for validFor from now.
func NewCA(validFor time.Duration) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	leafKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "mcp-code-runner egress proxy " + serial.Text(36)[:8]},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(validFor),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{cert: cert, key: key, leafKey: leafKey, leaves: map[string]*tls.Certificate{},
		certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// CertPEM is the CA's certificate, for a sandbox's trust store.
func (ca *CA) CertPEM() []byte { return ca.certPEM }

// leaf returns a certificate for host signed by the CA, made once.
func (ca *CA) leaf(host string) (*tls.Certificate, error) {
	ca.mu.Lock()
	defer ca.mu.Unlock()
	if c, ok := ca.leaves[host]; ok {
		return c, nil
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: host},
		NotBefore:    ca.cert.NotBefore,
		NotAfter:     ca.cert.NotAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	if ip := net.ParseIP(host); ip != nil {
		tmpl.IPAddresses = []net.IP{ip}
	} else {
		tmpl.DNSNames = []string{host}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &ca.leafKey.PublicKey, ca.key)
	if err != nil {
		return nil, err
	}
	c := &tls.Certificate{Certificate: [][]byte{der, ca.cert.Raw}, PrivateKey: ca.leafKey}
	ca.leaves[host] = c
	return c, nil
}

// intercept serves a tunnel to a host secrets are bound to: the proxy is the
// TLS server the sandbox talks to (with a certificate of its CA for host),
// reads one request, writes each secret into its header (Secret.apply),
// and sends the request on to
// the real host over TLS it verifies. The answer flows back; the connection
// carries that one request.
func (p *Proxy) intercept(rec *connRecord, c net.Conn, src io.Reader, host string, port int, private bool, secrets []Secret) {
	conn := tls.Server(readerConn{Conn: c, r: src}, &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			return p.ca.leaf(host)
		},
	})
	defer conn.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	if err := conn.Handshake(); err != nil {
		p.deny(rec, host, port, "CONNECT", "the TLS handshake with the sandbox failed: "+err.Error())
		return
	}
	if sni := conn.ConnectionState().ServerName; !strings.EqualFold(strings.TrimSuffix(sni, "."), host) {
		p.deny(rec, host, port, "CONNECT", fmt.Sprintf("the TLS server name %q is not the CONNECT host", sni))
		return
	}
	head := &io.LimitedReader{R: conn, N: maxHeaderBytes}
	req, err := http.ReadRequest(bufio.NewReaderSize(head, 4096))
	if err != nil {
		writeStatus(conn, http.StatusBadRequest, "egress proxy: not an HTTP request: "+err.Error())
		return
	}
	head.N = 1 << 62 // the bound is the head's; the body goes on
	_ = c.SetDeadline(time.Time{})
	up, err := p.dial(rec, host, port, private, "CONNECT")
	if err != nil {
		writeStatus(conn, http.StatusBadGateway, "egress proxy: "+err.Error())
		return
	}
	defer up.Close()
	upTLS := tls.Client(up, &tls.Config{ServerName: host, RootCAs: p.upstreamRoots, MinVersion: tls.VersionTLS12})
	if err := upTLS.Handshake(); err != nil {
		p.deny(rec, host, port, "CONNECT", "the host's TLS certificate is not trusted: "+err.Error())
		writeStatus(conn, http.StatusBadGateway, "egress proxy: the host's TLS certificate is not trusted")
		return
	}
	names := make([]string, len(secrets))
	for i, s := range secrets {
		s.apply(req.Header)
		names[i] = s.Name
	}
	req.Host = host
	if port != 443 {
		req.Host = net.JoinHostPort(host, fmt.Sprint(port))
	}
	req.Close = true
	rec.secret = strings.Join(names, ",")
	p.log.Info("egress secret sent", "host", host, "port", port, "secret", rec.secret)
	if err := req.Write(&countingWriter{w: upTLS, p: p, rec: rec}); err != nil {
		return
	}
	_, _ = io.Copy(&countingWriter{w: conn, p: p, rec: rec}, upTLS)
}

// readerConn is c with its reads from r (which holds what was read ahead).
type readerConn struct {
	net.Conn
	r io.Reader
}

func (c readerConn) Read(b []byte) (int, error) { return c.r.Read(b) }
