//go:build !fast

package e2e

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// secretAPI is an HTTPS server of the test's own on loopback, under the
// name localhost, that records the Authorization header of every request.
type secretAPI struct {
	port, caFile string
	mu           sync.Mutex
	got          []string
}

func (a *secretAPI) received() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.got...)
}

// startSecretAPI serves HTTPS on 127.0.0.1 with a certificate for
// localhost from a CA of its own, whose certificate it writes to caFile:
// the server under test trusts it through SSL_CERT_FILE, as it would a
// real API's through the system's roots.
func startSecretAPI(t *testing.T) *secretAPI {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "e2e secrets CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	leafTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"}, DNSNames: []string{"localhost"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	leafDER, err := x509.CreateCertificate(rand.Reader, leafTmpl, ca, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	a := &secretAPI{caFile: filepath.Join(t.TempDir(), "ca.pem")}
	if err := os.WriteFile(a.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a.mu.Lock()
		a.got = append(a.got, r.Header.Get("Authorization"))
		a.mu.Unlock()
		fmt.Fprint(w, "secret-api-answered")
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, a.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return a
}

// TestASecretGoesThroughMCPIntoRequestsWhileTheSandboxHoldsAPlaceholder:
// the real binary, configured by file with a secret bound to a loopback
// HTTPS API of the test's (for alice only, its value in the server's
// environment), serves the official Go MCP client. alice's run_code, her
// session's call, the call that resumes the session after pause_session
// and a call in its fork each reach the API with the real value in the
// Authorization header, while each program sees only the placeholder and
// no answer, output or audit line holds the value (the audit log names
// the secret). bob may not ask for it.
func TestASecretGoesThroughMCPIntoRequestsWhileTheSandboxHoldsAPlaceholder(t *testing.T) {
	testutil.RequireDocker(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	api := startSecretAPI(t)
	value := "mcre2e-real-" + rand.Text()
	dir := t.TempDir()
	configFile, audit := filepath.Join(dir, "config.json"), filepath.Join(dir, "audit.log")
	configJSON, _ := json.Marshal(map[string]any{"network": map[string]any{
		"max_tier": "allowlist", "private_hosts": []string{"localhost:" + api.port},
		"secrets": []map[string]any{{"name": "testapi", "hosts": []string{"localhost"}, "header": "Authorization",
			"format": "Bearer {value}", "value_env": "MCR_E2E_SECRET_VALUE", "principals": []string{"alice"}}},
	}})
	if err := os.WriteFile(configFile, configJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	// The server reads the value from its environment, and verifies the
	// API's certificate against the roots SSL_CERT_FILE names.
	t.Setenv("MCR_E2E_SECRET_VALUE", value)
	t.Setenv("SSL_CERT_FILE", api.caFile)
	srv := serveOn(t, dir, "--config", configFile, "--backend", "docker", "--pool-size", "0", "--audit-log", audit,
		"--http-auth-tokens", "alice="+restartAlice+",bob="+restartBob)
	alice, bob := connectAs(t, srv.url, restartAlice), connectAs(t, srv.url, restartBob)

	// Each call prints the placeholder it sees and the API's answer to a
	// request that carries the placeholder in the bound header.
	callAPI := fmt.Sprintf(`import os, urllib.request
placeholder = os.environ["MCR_SECRET_TESTAPI"]
answer = urllib.request.urlopen(urllib.request.Request("https://localhost:%s/", headers={"Authorization": "Bearer " + placeholder})).read().decode()
print(placeholder, answer)`, api.port)
	const want = "mcr-secret-placeholder:testapi secret-api-answered"
	var answers []string
	runIn := func(what string, args map[string]any) engine.Result {
		t.Helper()
		res, err := alice.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %s", what, err, textOf(res))
		}
		data, _ := json.Marshal(res)
		answers = append(answers, string(data))
		var r engine.Result
		data, _ = json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(data, &r); err != nil {
			t.Fatal(err)
		}
		if r.Status != engine.StatusOK || strings.TrimSpace(r.Stdout) != want {
			t.Fatalf("%s: %+v, want stdout %q", what, r, want)
		}
		return r
	}

	runIn("run_code with the secret", map[string]any{"language": "python", "network": "allowlist", "secrets": []string{"testapi"}, "code": callAPI})
	var s sessions.Info
	call(t, alice, "create_session", map[string]any{"language": "python", "network": "allowlist", "secrets": []string{"testapi"}}, &s)
	if strings.Join(s.Secrets, ",") != "testapi" {
		t.Errorf("the session's secrets: %q, want testapi", s.Secrets)
	}
	runIn("a call in the session", map[string]any{"language": "python", "session_id": s.SessionID, "code": callAPI})
	var paused sessions.PauseResult
	call(t, alice, "pause_session", map[string]any{"session_id": s.SessionID}, &paused)
	resumed := runIn("the call that resumes the session", map[string]any{"language": "python", "session_id": s.SessionID, "code": callAPI})
	if resumed.Resumed == nil {
		t.Fatalf("the call after pause_session did not resume the session: %+v", resumed)
	}
	var fork sessions.ForkResult
	call(t, alice, "fork_session", map[string]any{"session_id": s.SessionID}, &fork)
	if strings.Join(fork.Session.Secrets, ",") != "testapi" {
		t.Errorf("the fork's secrets: %q, want testapi", fork.Session.Secrets)
	}
	runIn("a call in the fork", map[string]any{"language": "python", "session_id": fork.Session.SessionID, "code": callAPI})

	// The four calls, and the session's cells again wherever they were
	// replayed: the resume that replays runs the session's first call
	// again, and a fork that replays runs both of the original's.
	calls := 4 + resumed.Resumed.CellsReplayed + fork.CellsReplayed
	got := api.received()
	if len(got) != calls {
		t.Errorf("the API received %d requests, want %d (resume %+v, fork mode %s): %q", len(got), calls, resumed.Resumed, fork.Mode, got)
	}
	t.Logf("the API received %d requests: 4 calls, %d cells replayed by the resume, %d by the fork (mode %s)", len(got), resumed.Resumed.CellsReplayed, fork.CellsReplayed, fork.Mode)
	for _, h := range got {
		if h != "Bearer "+value {
			t.Errorf("the API received Authorization %q, want the secret's value in the operator's format", h)
		}
	}
	for _, a := range answers {
		if strings.Contains(a, value) {
			t.Errorf("an answer holds the secret's value: %s", a)
		}
	}

	res, err := bob.CallTool(context.Background(), &mcp.CallToolParams{Name: "run_code", Arguments: map[string]any{"language": "python", "network": "allowlist", "secrets": []string{"testapi"}, "code": callAPI}})
	refusal := fmt.Sprint(err)
	if err == nil {
		refusal = textOf(res)
	}
	if (err == nil && !res.IsError) || !strings.Contains(refusal, `secret "testapi" is not for you`) {
		t.Errorf("bob asks for alice's secret: %s, want the refusal", refusal)
	}
	if n := len(api.received()); n != calls {
		t.Errorf("bob's refused call reached the API: %d requests, want %d", n, calls)
	}
	for _, id := range []string{fork.Session.SessionID, s.SessionID} {
		call(t, alice, "close_session", map[string]any{"session_id": id}, &struct{}{})
	}
	log, err := os.ReadFile(audit)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(log), value) || !strings.Contains(string(log), `"secret":"testapi"`) {
		t.Errorf("the audit log holds the value, or does not name the secret:\n%s", log)
	}
}
