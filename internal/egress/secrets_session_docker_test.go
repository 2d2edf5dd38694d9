//go:build !fast

package egress_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// sessionCells are two cells of one Python session, the interpreter
// keeping what the first found: each calls the bound host with the
// placeholder (whole, then inside the header's value with a scheme of the
// program's), and between them they look for anything shaped like the
// real value in the environment, /proc/self/environ, every readable region
// of the interpreter's memory (which has run both cells) and every file.
var sessionCells = []string{`import os, re, json, urllib.request
PAT = re.compile(rb"mcrtest-real-[0-9a-f]+")
placeholder = os.environ["MCR_SECRET_TESTAPI"]
found = set()
def scan(b):
    for m in PAT.findall(b):
        found.add(m.decode())

def call(auth):
    req = urllib.request.Request("https://api.secret.test:%[1]s/echo", headers={"Authorization": auth})
    echo = urllib.request.urlopen(req).read()
    print("ECHO", echo.decode())
    scan(echo)

call(placeholder)
env = json.dumps(dict(os.environ))
print("ENV", env)
scan(env.encode())
`, `call("Token " + placeholder)
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
print("FOUND", sorted(found))
`}

// TestASessionsSecretReachesItsHostInEveryCallWhileNoDumpHoldsIt: a
// session created with a secret calls the bound loopback API in two cells,
// the second writing the placeholder inside a header value of its own
// scheme; the API receives the real value both times, while the dumps of
// the session's environment, interpreter memory and files, its output and
// the session's record in the state store hold no trace of it (the record
// keeps the name).
func TestASessionsSecretReachesItsHostInEveryCallWhileNoDumpHoldsIt(t *testing.T) {
	api := startEchoAPI(t)
	e, g, b := secretsEngine(t, api, t.TempDir())
	m := sessions.NewManager(e, sessions.WithGate(g))
	defer func() { m.Shutdown(); testutil.NoLeftovers(t, b.Client()) }()
	ctx, cancel := context.WithTimeout(principal.WithContext(context.Background(), principal.Principal{Name: "alice"}), 5*time.Minute)
	defer cancel()

	info, err := m.Create(ctx, "python", 0, sessions.Options{Network: "allowlist", Secrets: []string{"testapi"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(info.Secrets, ",") != "testapi" {
		t.Errorf("the session's secrets: %q, want testapi", info.Secrets)
	}
	var out strings.Builder
	for i, cell := range sessionCells {
		res, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: strings.ReplaceAll(cell, "%[1]s", api.port), TimeoutSeconds: 120}, engine.RunOptions{})
		if err != nil {
			t.Fatalf("cell %d: %v", i+1, err)
		}
		if res.Status != engine.StatusOK {
			t.Fatalf("cell %d: %s, stdout %q, stderr %q", i+1, res.Status, res.Stdout, res.Stderr)
		}
		out.WriteString(res.Stdout + res.Stderr + res.Value)
	}
	got := api.received()
	if want := []string{"Bearer " + api.value, "Token " + api.value}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the API received Authorization %q, want %q", got, want)
	}
	for _, h := range []string{"Bearer ", "Token "} {
		sum := sha256.Sum256([]byte(h + api.value))
		if !strings.Contains(out.String(), "Authorization: sha256:"+hex.EncodeToString(sum[:])) {
			t.Errorf("the echo does not show the hash of %q and the value:\n%s", h, out.String())
		}
	}
	stdout := out.String()
	switch {
	case strings.Contains(stdout, api.value):
		t.Errorf("the real value is in the session's output")
	case !strings.Contains(stdout, "FOUND []"):
		t.Errorf("the session found something shaped like the value: %s", lineOf(stdout, "FOUND"))
	case !strings.Contains(stdout, "placeholder seen True") || strings.Contains(stdout, "FILES 0\n"):
		t.Errorf("the dump did not read the interpreter's memory and files: %s; %s", lineOf(stdout, "MEMORY"), lineOf(stdout, "FILES"))
	}
	entries, err := e.Store().List(ctx, "sessions/")
	if err != nil || len(entries) != 1 {
		t.Fatalf("the store's sessions: %d, %v", len(entries), err)
	}
	if rec := string(entries[0].Value); strings.Contains(rec, api.value) || !strings.Contains(rec, `"secrets":["testapi"]`) {
		t.Errorf("the session's record holds the value or lacks the name: %s", rec)
	}
}

// TestASessionKeepsItsSecretsThroughPauseResumeAndFork: the names go with
// the session; a resumed session and a fork each get a new proxy that
// writes the value into their calls.
func TestASessionKeepsItsSecretsThroughPauseResumeAndFork(t *testing.T) {
	api := startEchoAPI(t)
	e, g, b := secretsEngine(t, api, t.TempDir())
	m := sessions.NewManager(e, sessions.WithGate(g))
	defer func() { m.Shutdown(); testutil.NoLeftovers(t, b.Client()) }()
	ctx, cancel := context.WithTimeout(principal.WithContext(context.Background(), principal.Principal{Name: "alice"}), 5*time.Minute)
	defer cancel()
	info, err := m.Create(ctx, "python", 0, sessions.Options{Network: "allowlist", Secrets: []string{"testapi"}})
	if err != nil {
		t.Fatal(err)
	}
	call := fmt.Sprintf(`import os, urllib.request
r = urllib.request.urlopen(urllib.request.Request("https://api.secret.test:%s/", headers={"Authorization": "Bearer " + os.environ["MCR_SECRET_TESTAPI"]}))
print(r.status)`, api.port)
	run := func(id, code string) {
		t.Helper()
		res, err := m.Run(ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
		if err != nil || res.Status != engine.StatusOK || strings.TrimSpace(res.Stdout) != "200" {
			t.Fatalf("run in %s: %+v, %v", id, res, err)
		}
	}
	if _, err := m.Pause(ctx, info.SessionID); err != nil {
		t.Fatal(err)
	}
	run(info.SessionID, call) // resumes it
	if l := m.List(ctx); len(l) != 1 || strings.Join(l[0].Secrets, ",") != "testapi" || l[0].Paused {
		t.Errorf("after the resume: %+v", l)
	}
	f, err := m.Fork(ctx, info.SessionID)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(f.Session.Secrets, ",") != "testapi" {
		t.Errorf("the fork's secrets: %q", f.Session.Secrets)
	}
	run(f.Session.SessionID, call)
	// The call in the original and the call in the fork: two in all, each
	// with the value (the fork copied the interpreter in place; a fork
	// that replayed would have made the first call again).
	want := 2
	if f.Mode == sessions.ModeReplayed {
		want = 3
	}
	got := api.received()
	if len(got) != want {
		t.Fatalf("the API received %d calls, want %d: %q", len(got), want, got)
	}
	for _, h := range got {
		if h != "Bearer "+api.value {
			t.Errorf("the API received Authorization %q", h)
		}
	}
}

// TestASessionTakesOnlySecretsItsPrincipalMayUseAndItsCallsAddNone: a
// principal the operator did not list is refused at create_session, and
// so is a network that does not reach the host, each saying why, with no
// sandbox made; a call in a session may repeat the session's secret but
// not name another.
func TestASessionTakesOnlySecretsItsPrincipalMayUseAndItsCallsAddNone(t *testing.T) {
	api := startEchoAPI(t)
	e, g, b := secretsEngine(t, api, "")
	m := sessions.NewManager(e, sessions.WithGate(g))
	defer func() { m.Shutdown(); testutil.NoLeftovers(t, b.Client()) }()
	alice := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	bob := principal.WithContext(context.Background(), principal.Principal{Name: "bob"})
	refusals := []struct {
		name    string
		ctx     context.Context
		network string
		secret  string
		want    string
	}{
		{"a principal the operator did not list", bob, "allowlist", "testapi", `secret "testapi" is not for you; this server gives you none`},
		{"an unknown name", alice, "allowlist", "nope", `secret "nope" is not one of this server's secrets; you may ask for testapi`},
		{"no network", alice, "", "testapi", `network "none" has none; ask for network allowlist`},
	}
	for _, c := range refusals {
		t.Run(c.name, func(t *testing.T) {
			_, err := m.Create(c.ctx, "python", 0, sessions.Options{Network: c.network, Secrets: []string{c.secret}})
			if err == nil || !strings.Contains(err.Error(), c.want) || engine.CodeOf(err) != engine.CodeInvalid {
				t.Fatalf("got %v, want an invalid-argument error saying %q", err, c.want)
			}
		})
	}
	testutil.NoLeftovers(t, b.Client())

	plain, err := m.Create(alice, "python", 0, sessions.Options{Network: "allowlist"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m.Run(alice, engine.Request{SessionID: plain.SessionID, Code: "print(1)", Secrets: []string{"testapi"}}, engine.RunOptions{})
	if want := `secret "testapi": session ` + plain.SessionID + ` was created without secrets`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a call adding a secret: %v, want %q", err, want)
	}
	with, err := m.Create(alice, "python", 0, sessions.Options{Network: "allowlist", Secrets: []string{"testapi"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := m.Run(alice, engine.Request{SessionID: with.SessionID, Code: "import os; print(os.environ['MCR_SECRET_TESTAPI'])", Secrets: []string{"testapi"}}, engine.RunOptions{})
	if err != nil || strings.TrimSpace(res.Stdout) != "mcr-secret-placeholder:testapi" {
		t.Errorf("a call naming the session's own secret: %+v, %v", res, err)
	}
	_, err = m.Run(alice, engine.Request{SessionID: with.SessionID, Code: "print(1)", Secrets: []string{"other"}}, engine.RunOptions{})
	if want := "was created with testapi only"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a call naming another secret: %v, want %q", err, want)
	}
}
