//go:build !fast

package egress_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// loopbackResolver answers every name with the host's loopback, where the
// test's own servers listen.
type loopbackResolver struct{}

func (loopbackResolver) LookupIPAddr(context.Context, string) ([]net.IPAddr, error) {
	return []net.IPAddr{{IP: net.IPv4(127, 0, 0, 1)}}, nil
}

// selfSignedFor makes a certificate for names, its own root.
func selfSignedFor(t *testing.T, names ...string) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(7), Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert
}

// dumpProgram is a hostile program with a secret: it calls the bound host
// with the placeholder, then looks for anything shaped like the real value
// (its prefix is no secret) in its environment, /proc/self/environ, every
// readable region of its own memory and every file it can read, and opens
// a tunnel to the host the secret is not bound to, printing the hash of the
// certificate it meets there.
const dumpProgram = `import os, re, json, ssl, socket, hashlib, urllib.request
PAT = re.compile(rb"mcrtest-real-[0-9a-f]+")
placeholder = os.environ["MCR_SECRET_TESTAPI"]
found = set()
def scan(b):
    for m in PAT.findall(b):
        found.add(m.decode())

req = urllib.request.Request("https://api.secret.test:%[1]s/echo", headers={"Authorization": "Bearer " + placeholder})
echo = urllib.request.urlopen(req).read()
print("ECHO", echo.decode())
scan(echo)

env = json.dumps(dict(os.environ))
print("ENV", env)
scan(env.encode())
scan(open("/proc/self/environ", "rb").read())

regions, placeholder_in_memory = 0, False
with open("/proc/self/maps") as maps, open("/proc/self/mem", "rb", 0) as mem:
    for line in maps:
        parts = line.split()
        if "r" not in parts[1]:
            continue
        lo, hi = (int(x, 16) for x in parts[0].split("-"))
        try:
            mem.seek(lo)
            data = mem.read(hi - lo)
        except (OSError, ValueError, OverflowError):
            continue
        regions += 1
        scan(data)
        placeholder_in_memory = placeholder_in_memory or placeholder.encode() in data
print("MEMORY regions", regions, "placeholder seen", placeholder_in_memory)

files = 0
for root, dirs, names in os.walk("/"):
    if root in ("/proc", "/sys", "/dev"):
        dirs[:] = []
        continue
    for n in names:
        p = os.path.join(root, n)
        try:
            if os.path.islink(p) or not os.path.isfile(p) or os.path.getsize(p) > 50 << 20:
                continue
            with open(p, "rb") as f:
                scan(f.read())
            files += 1
        except OSError:
            pass
print("FILES", files)

proxy = os.environ["HTTPS_PROXY"].split("//", 1)[1]
host, port = proxy.rsplit(":", 1)
s = socket.create_connection((host, int(port)))
s.sendall(b"CONNECT other.secret.test:%[1]s HTTP/1.1\r\nHost: other.secret.test:%[1]s\r\n\r\n")
head = b""
while b"\r\n\r\n" not in head:
    head += s.recv(1)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
t = ctx.wrap_socket(s, server_hostname="other.secret.test")
print("TUNNEL", hashlib.sha256(t.getpeercert(True)).hexdigest())
t.close()
print("FOUND", sorted(found))
`

// TestASecretReachesItsHostWhileNoDumpFromTheSandboxHoldsIt: a run asks
// for a secret bound to a loopback HTTPS API the test serves; the API
// receives the real value in the header, while the program, which dumps
// its environment, memory, files and the headers the API echoes, finds
// only the placeholder. A host the secret is not bound to stays a tunnel
// with the host's own certificate, and the audit names the secret.
func TestASecretReachesItsHostWhileNoDumpFromTheSandboxHoldsIt(t *testing.T) {
	api := startEchoAPI(t)
	value, port, leaf := api.value, api.port, api.leaf
	e, g, b := secretsEngine(t, api, "")
	seen := &egressSeen{}
	g.Observe(seen.observe)
	ctx, cancel := context.WithTimeout(principal.WithContext(context.Background(), principal.Principal{Name: "alice"}), 5*time.Minute)
	defer cancel()

	res, err := e.Run(ctx, engine.Request{Language: "python", Network: "allowlist", Secrets: []string{"testapi"},
		Code: fmt.Sprintf(dumpProgram, port), TimeoutSeconds: 120}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Status != engine.StatusOK {
		t.Fatalf("the run: %s, stdout %q, stderr %q", res.Status, res.Stdout, res.Stderr)
	}
	if got := api.received(); len(got) != 1 || got[0] != "Bearer "+value {
		t.Errorf("the API received Authorization %q, want the real value once", got)
	}
	sum := sha256.Sum256([]byte("Bearer " + value))
	if !strings.Contains(res.Stdout, "Authorization: sha256:"+hex.EncodeToString(sum[:])) {
		t.Errorf("the echo does not show the real header's hash:\n%s", res.Stdout)
	}
	if strings.Contains(res.Stdout, value) || strings.Contains(res.Stderr, value) {
		t.Errorf("the real value is in the sandbox's output")
	}
	if !strings.Contains(res.Stdout, "FOUND []") {
		t.Errorf("the sandbox found something shaped like the value: %s", lineOf(res.Stdout, "FOUND"))
	}
	if !strings.Contains(res.Stdout, "placeholder seen True") || strings.Contains(res.Stdout, "FILES 0\n") {
		t.Errorf("the dump did not read the program's memory and files: %s; %s", lineOf(res.Stdout, "MEMORY"), lineOf(res.Stdout, "FILES"))
	}
	own := sha256.Sum256(leaf.Raw)
	if tunnel := lineOf(res.Stdout, "TUNNEL"); tunnel != "TUNNEL "+hex.EncodeToString(own[:]) {
		t.Errorf("the host the secret is not bound to showed %q, want its own certificate %x", tunnel, own)
	}
	testutil.Eventually(t, 30*time.Second, func() bool {
		_, _, ok := seen.find("api.secret.test")
		_, _, other := seen.find("other.secret.test")
		return ok && other
	}, "both connections reported")
	if c, owner, _ := seen.find("api.secret.test"); c.Secret != "testapi" || owner != "alice" {
		t.Errorf("the audit of the bound host: %+v owned by %q, want the secret's name", c, owner)
	}
	if c, _, _ := seen.find("other.secret.test"); c.Secret != "" {
		t.Errorf("the tunnel to the other host names secret %q", c.Secret)
	}
	testutil.NoLeftovers(t, b.Client())
}

// echoAPI is a loopback HTTPS API for the names api.secret.test and
// other.secret.test that echoes every header of a request, the
// Authorization header as its hash alone (what the sandbox reads is all it
// could learn from the API), and records the Authorization headers it
// received. value is the secret's real value, random per test.
type echoAPI struct {
	value, port string
	leaf        *x509.Certificate
	roots       *x509.CertPool
	mu          sync.Mutex
	got         []string
}

func (a *echoAPI) received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

func startEchoAPI(t *testing.T) *echoAPI {
	t.Helper()
	a := &echoAPI{value: "mcrtest-real-" + hex.EncodeToString(func() []byte { b := make([]byte, 16); _, _ = rand.Read(b); return b }())}
	cert, leaf := selfSignedFor(t, "api.secret.test", "other.secret.test")
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.got = append(a.got, r.Header.Get("Authorization"))
		a.mu.Unlock()
		var lines []string
		for k, vs := range r.Header {
			for _, v := range vs {
				if k == "Authorization" {
					sum := sha256.Sum256([]byte(v))
					v = "sha256:" + hex.EncodeToString(sum[:])
				}
				lines = append(lines, k+": "+v)
			}
		}
		sort.Strings(lines)
		fmt.Fprint(w, strings.Join(lines, " | "))
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, a.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	a.leaf, a.roots = leaf, x509.NewCertPool()
	a.roots.AddCert(leaf)
	return a
}

// secretsEngine is an engine whose operator binds the secret testapi (for
// alice only) to api's host, resolving every name to loopback and trusting
// api's certificate upstream; dataDir, when set, keeps paused sessions.
func secretsEngine(t *testing.T, api *echoAPI, dataDir string) (*engine.Engine, *gate.Gate, *docker.Backend) {
	t.Helper()
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierAllowlist
	cfg.Network.PrivateHosts = []string{"api.secret.test:" + api.port, "other.secret.test:" + api.port}
	cfg.Network.Secrets = []config.Secret{{Name: "testapi", Hosts: []string{"api.secret.test"}, Header: "Authorization",
		Format: "Bearer {value}", ValueEnv: "MCR_TEST_SECRET_VALUE", Principals: []string{"alice"}}}
	cfg.Pool.Sizes = nil
	if dataDir != "" {
		cfg.DataDir = dataDir
	}
	testutil.Unhurried(&cfg)
	g := gate.New(cfg, languages.Builtin(), gate.Options{Resolver: loopbackResolver{}, UpstreamRoots: api.roots})
	if err := g.LoadSecrets(func(k string) string { return map[string]string{"MCR_TEST_SECRET_VALUE": api.value}[k] }); err != nil {
		t.Fatal(err)
	}
	e, b := testbackend.Engine(t, &cfg, engine.WithGate(g))
	requireImages(t, e, "python")
	return e, g, b
}

// TestARunMayAskOnlyForItsOwnSecretsOverANetworkThatReachesThem: an
// unknown name, another principal's secret and a tier that does not reach
// the bound host are refused before any sandbox, each saying what to do.
func TestARunMayAskOnlyForItsOwnSecretsOverANetworkThatReachesThem(t *testing.T) {
	cfg := config.Default()
	cfg.Network.MaxTier = config.TierAllowlist
	cfg.Network.Allowlist = []string{"api.example.com"}
	cfg.Network.Secrets = []config.Secret{
		{Name: "mine", Hosts: []string{"api.example.com"}, Header: "Authorization", ValueEnv: "V", Principals: []string{"alice"}},
		{Name: "bobs", Hosts: []string{"api.example.com"}, Header: "Authorization", ValueEnv: "V", Principals: []string{"bob"}},
		{Name: "elsewhere", Hosts: []string{"api.elsewhere.example"}, Header: "X-Key", ValueEnv: "V"},
	}
	g := gate.New(cfg, languages.Builtin(), gate.Options{})
	if err := g.LoadSecrets(func(string) string { return "v" }); err != nil {
		t.Fatal(err)
	}
	e, b := testbackend.Engine(t, &cfg, engine.WithGate(g))
	ctx := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	cases := []struct {
		name, network, secret, want string
	}{
		{"an unknown name", "allowlist", "nope", `secret "nope" is not one of this server's secrets; you may ask for elsewhere, mine`},
		{"another principal's", "allowlist", "bobs", `secret "bobs" is not for you; you may ask for elsewhere, mine`},
		{"no network", "", "mine", `network "none" has none; ask for network allowlist`},
		{"a host off the tier", "allowlist", "elsewhere", "bound to api.elsewhere.example, which network \"allowlist\" does not reach"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.Run(ctx, engine.Request{Language: "python", Code: "print(1)", Network: c.network, Secrets: []string{c.secret}}, engine.RunOptions{})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
	testutil.NoLeftovers(t, b.Client())
}

func lineOf(out, prefix string) string {
	for l := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
