package engine

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/wire"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// CheckNetwork validates a requested tier ("" is none) against the
// operator's maximum and returns it.
func (e *Engine) CheckNetwork(tier string) (string, error) {
	if tier == "" {
		tier = egress.TierNone
	}
	mostAllowed := e.cfg.Network.MaxTier
	if egress.Rank(tier) < 0 {
		return "", invalid("network %q is not a tier; use none, packages or allowlist (this server allows up to %s)", tier, mostAllowed)
	}
	if egress.Rank(tier) > egress.Rank(mostAllowed) {
		return "", invalid("network %q is above this server's maximum, %q; ask for %s or less, or ask the operator to raise network.max_tier", tier, mostAllowed, mostAllowed)
	}
	return tier, nil
}

// packageSpec is what a package argument may look like: a name with an
// optional version or range, for pip or npm; never an option (a leading
// "-"), a path or a URL.
var packageSpec = regexp.MustCompile(`^[A-Za-z0-9@_][A-Za-z0-9@/._\-=<>!~^*,+\[\] ]{0,199}$`)

// CheckPackages validates the packages of a request for lang.
func (e *Engine) CheckPackages(lang languages.Language, specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	if lang.Packages == "" {
		return invalid("%s takes no packages here; packages are installed for %s", lang.Name, strings.Join(e.packageLanguages(), ", "))
	}
	if egress.Rank(e.cfg.Network.MaxTier) < egress.Rank(egress.TierPackages) {
		return invalid("installing packages needs network access to the package registry, and this server allows network %q only; ask the operator to set network.max_tier to packages", e.cfg.Network.MaxTier)
	}
	if n := len(specs); n > e.cfg.Packages.MaxPackages {
		return invalid("%d packages asked for, the limit is %d", n, e.cfg.Packages.MaxPackages)
	}
	for _, s := range specs {
		if !packageSpec.MatchString(s) || strings.Contains(s, "://") || strings.Contains(s, "..") {
			return invalid("package %q is not a package name with an optional version, like requests==2.32.3 or lodash@4 (no options, paths or URLs)", s)
		}
	}
	return nil
}

func (e *Engine) packageLanguages() []string {
	var out []string
	for _, l := range e.reg.Languages() {
		if l.Packages != "" {
			out = append(out, l.Name)
		}
	}
	return out
}

// registryURL is the registry the manager installs from.
func (e *Engine) registryURL(manager string) string {
	if manager == "npm" {
		return e.cfg.Packages.NpmRegistryURL
	}
	return e.cfg.Packages.PypiIndexURL
}

// Policy returns the egress policy of tier for a sandbox of lang (whose
// package registry the packages tier allows), or nil for none.
func (e *Engine) Policy(tier string, lang languages.Language) *egress.Policy {
	if tier == "" || tier == egress.TierNone {
		return nil
	}
	p := &egress.Policy{Tier: tier, Private: e.cfg.Network.PrivateHosts,
		MaxBytes: int64(e.cfg.Network.MaxMB) << 20, MaxConnections: e.cfg.Network.MaxConnections}
	if lang.Packages != "" {
		if host, _, err := egress.HostOfURL(e.registryURL(lang.Packages)); err == nil {
			p.Hosts = append(p.Hosts, host)
		}
		p.Hosts = append(p.Hosts, e.cfg.Packages.ExtraHosts...)
	}
	if tier == egress.TierAllowlist {
		p.Hosts = append(p.Hosts, e.cfg.Network.Allowlist...)
	}
	return p
}

// proxyEnv is what points a sandbox's programs at its egress proxy.
func proxyEnv() []string {
	u := "http://" + wire.EgressListen
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

// Egress makes the egress proxy of tier for a sandbox of lang, logging as
// name, and the environment that points the sandbox's programs at it; nil
// for the tier none.
func (e *Engine) Egress(tier string, lang languages.Language, name string) (*egress.Proxy, []string) {
	proxy := e.newProxy(e.Policy(tier, lang), name)
	if proxy == nil {
		return nil, nil
	}
	return proxy, proxyEnv()
}

// newProxy makes the proxy of one sandbox, logging as the run.
func (e *Engine) newProxy(p *egress.Policy, runID string) *egress.Proxy {
	if p == nil {
		return nil
	}
	return egress.New(*p, egress.Options{Logger: e.log.With("run", runID, "component", "egress"), Resolver: e.resolver})
}

func describeDenied(r egress.Report) string {
	if len(r.Denied) == 0 {
		return ""
	}
	return fmt.Sprintf("the egress proxy denied: %s", strings.Join(r.Denied, "; "))
}
