package egress

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Resolver looks names up; *net.Resolver is one. Tests give their own.
type Resolver interface {
	LookupIPAddr(ctx context.Context, host string) ([]net.IPAddr, error)
}

// Proxy serves one sandbox. It is made for the sandbox's policy and serves
// on the listener the backend makes for that sandbox alone, so everything
// it counts and reports is that sandbox's.
type Proxy struct {
	policy        Policy
	log           *slog.Logger
	resolver      Resolver
	dialer        net.Dialer
	ca            *CA
	upstreamRoots *x509.CertPool
	onConnection  func(Connection)
	approval      func(host string, port int, tunnel bool) Approval

	conns atomic.Int64 // connections opened
	bytes atomic.Int64 // bytes both ways

	mu      sync.Mutex
	denied  map[string]string // host -> first reason
	pending map[string]bool   // approvable hosts denied for want of an approval
	allowed map[string]bool
	ln      []net.Listener
	open    map[net.Conn]struct{}
	closed  bool
}

// Options configure a Proxy.
type Options struct {
	// Logger receives one line per decision.
	Logger *slog.Logger
	// Resolver looks names up; nil means the host's resolver.
	Resolver Resolver
	// CA terminates the tunnels to the hosts of the policy's secrets; with
	// none, those tunnels are spliced like any other and carry no secret.
	CA *CA
	// UpstreamRoots verify the hosts of the policy's secrets; nil means the
	// system's roots.
	UpstreamRoots *x509.CertPool
	// OnConnection, if set, is told of every connection the sandbox made
	// through the proxy once it ends (the audit log, the metrics).
	OnConnection func(Connection)
	// Approval, if set, is asked about a host off the policy's list: the
	// operator may let the user approve it, and the user may have.
	Approval func(host string, port int, tunnel bool) Approval
}

// Approval is what the operator and the user said of a host off a
// sandbox's list.
type Approval struct {
	// Approvable: the operator lets the user approve this host and port.
	Approvable bool
	// Approved: the sandbox's principal approved it, and the approval has
	// not ended.
	Approved bool
	// Private: the operator named it with its port, as a private host: it
	// may resolve to a private address.
	Private bool
}

// New returns a proxy enforcing p.
func New(p Policy, opts Options) *Proxy {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	var r Resolver = net.DefaultResolver
	if opts.Resolver != nil {
		r = opts.Resolver
	}
	return &Proxy{policy: p, log: log.With("tier", p.Tier), resolver: r, dialer: net.Dialer{Timeout: 20 * time.Second},
		ca: opts.CA, upstreamRoots: opts.UpstreamRoots, onConnection: opts.OnConnection, approval: opts.Approval,
		denied: map[string]string{}, pending: map[string]bool{}, allowed: map[string]bool{}, open: map[net.Conn]struct{}{}}
}

// Report is what a sandbox did through its proxy.
type Report struct {
	Tier        string   `json:"tier" jsonschema:"the network tier the run had: none, packages or allowlist"`
	Allowed     []string `json:"allowed,omitempty" jsonschema:"hosts the run reached through the egress proxy"`
	Denied      []string `json:"denied,omitempty" jsonschema:"hosts the egress proxy refused, each with the reason: ask the operator to allow a host, or use a host on the tier's list"`
	Connections int64    `json:"connections" jsonschema:"connections the run opened through the egress proxy"`
	Bytes       int64    `json:"bytes" jsonschema:"bytes sent and received through the egress proxy"`
	// Approvable are the denied hosts the operator lets the user approve
	// and the principal has not: what run_code asks the user about.
	Approvable []string `json:"-"`
}

// Report returns what the sandbox did so far.
func (p *Proxy) Report() Report {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := Report{Tier: p.policy.Tier, Connections: p.conns.Load(), Bytes: p.bytes.Load()}
	for h := range p.allowed {
		r.Allowed = append(r.Allowed, h)
	}
	for h, why := range p.denied {
		r.Denied = append(r.Denied, h+": "+why)
	}
	for h := range p.pending {
		r.Approvable = append(r.Approvable, h)
	}
	sort.Strings(r.Allowed)
	sort.Strings(r.Denied)
	sort.Strings(r.Approvable)
	return r
}

// Serve accepts the sandbox's connections on ln until ln or the proxy is
// closed.
func (p *Proxy) Serve(ln net.Listener) error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		ln.Close()
		return net.ErrClosed
	}
	p.ln = append(p.ln, ln)
	p.mu.Unlock()
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		if !p.track(c) {
			c.Close()
			return net.ErrClosed
		}
		go p.handle(c)
	}
}

// Close stops the proxy and every connection through it.
func (p *Proxy) Close() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.closed = true
	for _, ln := range p.ln {
		ln.Close()
	}
	for c := range p.open {
		c.Close()
	}
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.open[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.open, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) deny(rec *connRecord, host string, port int, how, reason string) {
	rec.decide(host, port, how, false, reason)
	key := net.JoinHostPort(host, strconv.Itoa(port))
	p.log.Warn("egress denied", "host", host, "port", port, "method", how, "reason", reason)
	p.mu.Lock()
	if _, ok := p.denied[key]; !ok && len(p.denied) < 64 {
		p.denied[key] = reason
	}
	p.mu.Unlock()
}

func (p *Proxy) allow(rec *connRecord, host string, port int, how string, addr string) {
	rec.decide(host, port, how, true, "")
	p.log.Info("egress allowed", "host", host, "port", port, "method", how, "addr", addr)
	p.mu.Lock()
	if len(p.allowed) < 64 {
		p.allowed[net.JoinHostPort(host, strconv.Itoa(port))] = true
	}
	p.mu.Unlock()
}

// check is the policy's decision, widened by the principal's approval of
// a host off the list that the operator marked approvable. An approvable
// host without an approval is remembered for the run's result.
func (p *Proxy) check(rec *connRecord, host string, port int, tunnel bool) (allowed, private bool, reason string) {
	allowed, private, reason = p.policy.check(host, port, tunnel)
	if allowed || p.approval == nil || net.ParseIP(strings.Trim(host, "[]")) != nil || MatchHost(p.policy.Hosts, host) {
		return allowed, private, reason
	}
	v := p.approval(host, port, tunnel)
	switch {
	case !v.Approvable:
		return false, false, reason
	case v.Approved:
		rec.approve()
		return true, v.Private, ""
	}
	p.mu.Lock()
	if len(p.pending) < 16 {
		p.pending[strings.TrimSuffix(host, ".")] = true
	}
	p.mu.Unlock()
	return false, false, reason + "; the operator lets a user approve it"
}

// maxHeaderBytes bounds a request's head, and helloLimit a TLS ClientHello.
const (
	maxHeaderBytes = 64 << 10
	helloLimit     = 64 << 10
)

// handle serves one connection from the sandbox: one request, or one
// tunnel.
func (p *Proxy) handle(c net.Conn) {
	defer p.untrack(c)
	rec := &connRecord{}
	defer p.report(rec)
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	head := &io.LimitedReader{R: c, N: maxHeaderBytes}
	br := bufio.NewReaderSize(head, 4096)
	req, err := http.ReadRequest(br)
	if err != nil {
		writeStatus(c, http.StatusBadRequest, "egress proxy: not an HTTP proxy request: "+err.Error())
		return
	}
	head.N = 1 << 62 // the bound is the head's; a body or a tunnel goes on
	_ = c.SetReadDeadline(time.Time{})
	if n := p.conns.Add(1); p.policy.MaxConnections > 0 && n > int64(p.policy.MaxConnections) {
		host, port := splitHostPort(req)
		p.deny(rec, host, port, req.Method, fmt.Sprintf("over the run's limit of %d connections", p.policy.MaxConnections))
		writeStatus(c, http.StatusTooManyRequests, fmt.Sprintf("egress proxy: over the run's limit of %d connections", p.policy.MaxConnections))
		return
	}
	if req.Method == http.MethodConnect {
		p.tunnel(rec, c, br, req)
		return
	}
	p.forward(rec, c, req)
}

func splitHostPort(req *http.Request) (string, int) {
	hostport := req.Host
	if req.Method != http.MethodConnect && req.URL != nil && req.URL.Host != "" {
		hostport = req.URL.Host
	}
	host, ps, err := net.SplitHostPort(hostport)
	if err != nil {
		host = strings.Trim(hostport, "[]")
		if req.Method == http.MethodConnect {
			return strings.ToLower(host), 0
		}
		return strings.ToLower(host), 80
	}
	port, err := strconv.Atoi(ps)
	if err != nil || port <= 0 || port > 65535 {
		port = 0
	}
	return strings.ToLower(host), port
}

// tunnel serves a CONNECT: the host must be allowed, the port 443 (or the
// operator's mirror port), and the tunnel's TLS ClientHello must name the
// same host (SNI), so that a tunnel opened for an allowed name cannot carry
// a connection to another one.
func (p *Proxy) tunnel(rec *connRecord, c net.Conn, br *bufio.Reader, req *http.Request) {
	host, port := splitHostPort(req)
	ok, private, reason := p.check(rec, host, port, true)
	if !ok {
		p.deny(rec, host, port, "CONNECT", reason)
		writeStatus(c, http.StatusForbidden, "egress proxy: "+reason)
		return
	}
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		return
	}
	src := io.MultiReader(br, c) // br holds anything sent with the CONNECT
	if secrets := p.secretsFor(host); len(secrets) > 0 && p.ca != nil {
		p.intercept(rec, c, src, host, port, private, secrets)
		return
	}
	// The ClientHello: read through a recorder, to be replayed upstream.
	_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
	var hello bytes.Buffer
	sni, err := readSNI(io.TeeReader(io.LimitReader(src, helloLimit), &hello))
	_ = c.SetReadDeadline(time.Time{})
	switch {
	case err != nil:
		p.deny(rec, host, port, "CONNECT", "the tunnel did not start with a TLS ClientHello: "+err.Error())
		return
	case !strings.EqualFold(strings.TrimSuffix(sni, "."), host) && (!private || net.ParseIP(host) == nil || sni != ""):
		p.deny(rec, host, port, "CONNECT", fmt.Sprintf("the TLS server name %q is not the CONNECT host", sni))
		return
	}
	up, err := p.dial(rec, host, port, private, "CONNECT")
	if err != nil {
		return
	}
	defer up.Close()
	if _, err := up.Write(hello.Bytes()); err != nil {
		return
	}
	rec.bytes.Add(int64(hello.Len()))
	p.count(int64(hello.Len()))
	p.splice(rec, c, src, up)
}

// forward serves a plain HTTP request in absolute form.
func (p *Proxy) forward(rec *connRecord, c net.Conn, req *http.Request) {
	host, port := splitHostPort(req)
	if req.URL == nil || req.URL.Scheme != "http" || req.URL.Host == "" {
		p.deny(rec, host, port, req.Method, "not an absolute http:// URL; use CONNECT for https")
		writeStatus(c, http.StatusBadRequest, "egress proxy: give an absolute http:// URL, or CONNECT for https")
		return
	}
	ok, private, reason := p.check(rec, host, port, false)
	if !ok {
		p.deny(rec, host, port, req.Method, reason)
		writeStatus(c, http.StatusForbidden, "egress proxy: "+reason)
		return
	}
	up, err := p.dial(rec, host, port, private, req.Method)
	if err != nil {
		writeStatus(c, http.StatusBadGateway, "egress proxy: "+err.Error())
		return
	}
	defer up.Close()
	req.RequestURI = ""
	// The Host header is the checked host, whatever the program sent: a
	// server behind a CDN routes by it, and another name there is another
	// site.
	req.Host = req.URL.Host
	req.Header.Del("Proxy-Connection")
	req.Header.Del("Proxy-Authorization")
	req.Close = true
	counted := &countingWriter{w: up, p: p, rec: rec}
	if err := req.Write(counted); err != nil {
		return
	}
	// Only the answer flows back: one request per connection, so a second
	// request sent on it (pipelined, for another host) never reaches the
	// upstream connection unchecked.
	_, _ = io.Copy(&countingWriter{w: c, p: p, rec: rec}, up)
}

// dial resolves host itself and dials an address the policy allows: for a
// host the operator did not name, never loopback, link-local, private or
// otherwise reserved.
func (p *Proxy) dial(rec *connRecord, host string, port int, private bool, how string) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var addrs []net.IP
	if ip := net.ParseIP(host); ip != nil {
		addrs = []net.IP{ip}
	} else {
		found, err := p.resolver.LookupIPAddr(ctx, host)
		if err != nil {
			p.deny(rec, host, port, how, "the name does not resolve: "+err.Error())
			return nil, fmt.Errorf("%s does not resolve: %w", host, err)
		}
		for _, a := range found {
			addrs = append(addrs, a.IP)
		}
	}
	var lastErr error
	for _, ip := range addrs {
		if !private {
			if why := blockedIP(ip); why != "" {
				lastErr = fmt.Errorf("%s resolves to %s, a %s address, which only a host the operator names may reach", host, ip, why)
				continue
			}
		}
		addr := net.JoinHostPort(ip.String(), strconv.Itoa(port))
		conn, err := p.dialer.DialContext(ctx, "tcp", addr)
		if err != nil {
			lastErr = err
			continue
		}
		p.allow(rec, host, port, how, addr)
		return conn, nil
	}
	if lastErr == nil {
		lastErr = fmt.Errorf("%s has no address", host)
	}
	p.deny(rec, host, port, how, lastErr.Error())
	return nil, lastErr
}

// splice copies both ways until either side ends or the byte cap is hit.
func (p *Proxy) splice(rec *connRecord, c net.Conn, src io.Reader, up net.Conn) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(&countingWriter{w: up, p: p, rec: rec}, src)
		if tc, ok := up.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(&countingWriter{w: c, p: p, rec: rec}, up)
		if uc, ok := c.(interface{ CloseWrite() error }); ok {
			_ = uc.CloseWrite()
		}
		done <- struct{}{}
	}()
	<-done
	<-done
}

func (p *Proxy) count(n int64) bool {
	total := p.bytes.Add(n)
	return p.policy.MaxBytes <= 0 || total <= p.policy.MaxBytes
}

// errOverBytes ends a copy past the run's byte cap.
var errOverBytes = errors.New("over the run's egress byte limit")

type countingWriter struct {
	w   io.Writer
	p   *Proxy
	rec *connRecord
}

func (cw *countingWriter) Write(b []byte) (int, error) {
	cw.rec.bytes.Add(int64(len(b)))
	if !cw.p.count(int64(len(b))) {
		cw.p.deny(cw.rec, "*", 0, "bytes", fmt.Sprintf("over the run's limit of %d bytes through the proxy", cw.p.policy.MaxBytes))
		return 0, errOverBytes
	}
	return cw.w.Write(b)
}

func writeStatus(c net.Conn, code int, msg string) {
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s\n",
		code, http.StatusText(code), len(msg)+1, msg)
}

// readSNI reads a TLS ClientHello from r and returns its server name ("" if
// it names none), with
// the standard library's parser: a server handshake that stops as soon as
// it has seen the hello.
func readSNI(r io.Reader) (string, error) {
	var sni string
	seen := errors.New("hello seen")
	conn := tls.Server(readOnlyConn{r: r}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			sni = h.ServerName
			return nil, seen
		},
	})
	err := conn.Handshake()
	if errors.Is(err, seen) {
		return sni, nil // "" when the hello names no server
	}
	return "", err
}

// readOnlyConn is a net.Conn that reads from r and drops writes: enough for
// a TLS server to parse a ClientHello.
type readOnlyConn struct{ r io.Reader }

func (c readOnlyConn) Read(b []byte) (int, error)     { return c.r.Read(b) }
func (readOnlyConn) Write(b []byte) (int, error)      { return len(b), nil }
func (readOnlyConn) Close() error                     { return nil }
func (readOnlyConn) LocalAddr() net.Addr              { return &net.UnixAddr{} }
func (readOnlyConn) RemoteAddr() net.Addr             { return &net.UnixAddr{} }
func (readOnlyConn) SetDeadline(time.Time) error      { return nil }
func (readOnlyConn) SetReadDeadline(time.Time) error  { return nil }
func (readOnlyConn) SetWriteDeadline(time.Time) error { return nil }
