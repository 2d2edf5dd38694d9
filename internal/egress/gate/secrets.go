package gate

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path"
	"sort"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/fault"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// CAFile is where a run with secrets finds the certificate of its proxy's
// CA, in its workspace; SSL_CERT_FILE and its kin name it.
const CAFile = ".mcr-egress-ca.pem"

// caValidity is how long the CA a server makes at start stays valid.
const caValidity = 365 * 24 * time.Hour

// systemBundles are where hosts keep their trusted roots as one PEM file;
// a run's bundle is the first found plus the proxy's CA, so the hosts its
// secrets are not bound to still verify as before.
var systemBundles = []string{"/etc/ssl/certs/ca-certificates.crt", "/etc/pki/tls/certs/ca-bundle.crt", "/etc/ssl/cert.pem"}

// boundSecret is an operator's secret with its value, ready for a proxy.
type boundSecret struct {
	conf   config.Secret
	secret egress.Secret
}

// LoadSecrets reads the values of the operator's secrets (network.secrets)
// with getenv or from their files, and makes the CA with which the egress
// proxies terminate the tunnels to the secrets' hosts. The key of the CA
// lives in this process's memory only. Call it once, before serving.
func (g *Gate) LoadSecrets(getenv func(string) string) error {
	if len(g.cfg.Network.Secrets) == 0 {
		return nil
	}
	secrets := map[string]boundSecret{}
	for _, s := range g.cfg.Network.Secrets {
		v, err := s.Value(getenv)
		if err != nil {
			return err
		}
		secrets[s.Name] = boundSecret{conf: s, secret: egress.Secret{Name: s.Name, Hosts: s.Hosts,
			Header: http.CanonicalHeaderKey(s.Header), Format: s.Format, Value: v}}
	}
	ca, err := egress.NewCA(caValidity)
	if err != nil {
		return fmt.Errorf("making the egress proxy's CA for network.secrets: %w", err)
	}
	bundle := append([]byte(nil), ca.CertPEM()...)
	for _, p := range systemBundles {
		if data, err := os.ReadFile(p); err == nil {
			bundle = append(append(data, '\n'), ca.CertPEM()...)
			break
		}
	}
	g.secrets, g.ca, g.caBundle = secrets, ca, bundle
	return nil
}

// secretsFor lists the names of the secrets the principal called name may
// ask for.
func (g *Gate) secretsFor(name string) []string {
	var out []string
	for n, s := range g.secrets {
		if s.conf.Allows(name) {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// CheckSecrets resolves the secrets a sandbox of lang with network tier,
// owned by the principal called who, asks for by name: each must be one of
// the operator's, allowed to who, and bound to hosts the tier reaches. A
// session checks its owner's secrets again whenever it gets a new sandbox
// (a fork, a resume), against the operator's configuration of the moment.
func (g *Gate) CheckSecrets(who string, names []string, tier string, lang languages.Language) ([]egress.Secret, error) {
	if len(names) == 0 {
		return nil, nil
	}
	mayUse := g.secretsFor(who)
	allowed := "this server gives you none"
	if len(mayUse) > 0 {
		allowed = "you may ask for " + strings.Join(mayUse, ", ")
	}
	policy := g.policy(tier, lang)
	seen := map[string]bool{}
	var out []egress.Secret
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		s, ok := g.secrets[n]
		switch {
		case !ok:
			return nil, fault.Invalid("secret %q is not one of this server's secrets; %s (the operator binds secrets in network.secrets)", n, allowed)
		case !s.conf.Allows(who):
			return nil, fault.Invalid("secret %q is not for you; %s", n, allowed)
		case policy == nil:
			return nil, fault.Invalid("secret %q is sent to %s through the egress proxy, and network %q has none; ask for network allowlist (the operator lists its hosts)", n, strings.Join(s.secret.Hosts, ", "), cmpTier(tier))
		}
		for _, h := range s.secret.Hosts {
			if !policy.Names(h) {
				return nil, fault.Invalid("secret %q is bound to %s, which network %q does not reach; ask for network allowlist, or ask the operator to add %s to network.allowlist", n, h, tier, h)
			}
		}
		out = append(out, s.secret)
	}
	return out, nil
}

func cmpTier(tier string) string {
	if tier == "" {
		return egress.TierNone
	}
	return tier
}

// PlaceholderEnv is the environment variable through which a run sees the
// placeholder of the secret called name: MCR_SECRET_ and the name in
// capitals, with - as _.
func PlaceholderEnv(name string) string {
	return "MCR_SECRET_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// SecretNames are the names of secrets, in their order.
func SecretNames(secrets []egress.Secret) []string {
	out := make([]string, len(secrets))
	for i, s := range secrets {
		out[i] = s.Name
	}
	return out
}

// SessionProxy makes the egress proxy of a session's sandbox, as Proxy,
// writing secrets (CheckSecrets') into the requests to their hosts for
// as long as the session lives; besides the environment that points at the
// proxy it returns what every call of the session gets from secretsEnv.
// The file is rewritten at each call (and so is writable): a workspace
// that a fork copied or a resume restored may hold another server's CA.
func (g *Gate) SessionProxy(ctx context.Context, tier string, lang languages.Language, secrets []egress.Secret) (*egress.Proxy, []string, []wire.File) {
	proxy, env := g.Proxy(ctx, tier, lang, "session", secrets)
	if proxy == nil {
		return nil, nil, nil
	}
	senv, files := g.SecretsEnv(secrets)
	for i := range files {
		files[i].Mode = 0o644
	}
	return proxy, append(env, senv...), files
}

// SecretsEnv is what a run with secrets sees of them: a placeholder for
// each, and the trust of its proxy's CA in the file CAFile, which the
// usual variables of TLS clients name.
func (g *Gate) SecretsEnv(secrets []egress.Secret) ([]string, []wire.File) {
	if len(secrets) == 0 || g.ca == nil {
		return nil, nil
	}
	ca := path.Join(wire.WorkspacePath, CAFile)
	env := []string{"SSL_CERT_FILE=" + ca, "REQUESTS_CA_BUNDLE=" + ca, "CURL_CA_BUNDLE=" + ca, "NODE_EXTRA_CA_CERTS=" + ca, "GIT_SSL_CAINFO=" + ca}
	for _, s := range secrets {
		env = append(env, PlaceholderEnv(s.Name)+"="+egress.Placeholder(s.Name))
	}
	return env, []wire.File{{Path: CAFile, Data: g.caBundle, Mode: 0o444}}
}
