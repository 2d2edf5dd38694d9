package engine

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
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
	m, ok := e.reg.PackageManager(lang)
	if !ok {
		return invalid("%s takes no packages here; packages are installed for %s", lang.Name, strings.Join(e.packageLanguages(), ", "))
	}
	if _, ok := e.cfg.Packages.RegistryURL(m.RegistrySetting); !ok {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("the package manager %s of the language registry installs from packages.%s, which is no setting of this server; the operator's languages file must name one of %s", m.Name, m.RegistrySetting, strings.Join(e.cfg.Packages.RegistrySettings(), ", "))}
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

// registryURL is the registry m installs from: the packages setting it
// names.
func (e *Engine) registryURL(m languages.PackageManager) string {
	u, _ := e.cfg.Packages.RegistryURL(m.RegistrySetting)
	return u
}

// policy returns the egress policy of tier for a sandbox of lang (whose
// package registry the packages tier allows), or nil for none.
func (e *Engine) policy(tier string, lang languages.Language) *egress.Policy {
	if tier == "" || tier == egress.TierNone {
		return nil
	}
	p := &egress.Policy{Tier: tier, Private: e.cfg.Network.PrivateHosts,
		MaxBytes: int64(e.cfg.Network.MaxMB) << 20, MaxConnections: e.cfg.Network.MaxConnections}
	if m, ok := e.reg.PackageManager(lang); ok {
		if host, _, err := egress.HostOfURL(e.registryURL(m)); err == nil {
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

// egress makes the egress proxy of tier, with the secrets it sets, for a
// sandbox of lang that ctx's principal owns, logging as name, and the
// environment that points the sandbox's programs at it; nil for the tier
// none.
func (e *Engine) egress(ctx context.Context, tier string, lang languages.Language, name string, secrets []egress.Secret) (*egress.Proxy, []string) {
	p := e.policy(tier, lang)
	if p != nil {
		p.Secrets = secrets
	}
	proxy := e.newProxy(ctx, p, name)
	if proxy == nil {
		return nil, nil
	}
	return proxy, proxyEnv()
}

// newProxy makes the proxy of one sandbox that ctx's principal owns,
// logging as the run; the egress observer hears of each of its
// connections.
func (e *Engine) newProxy(ctx context.Context, p *egress.Policy, runID string) *egress.Proxy {
	if p == nil {
		return nil
	}
	owner := principal.FromContext(ctx).Name
	observe := e.egressObserver()
	return egress.New(*p, egress.Options{Logger: e.log.With("run", runID, "component", "egress"), Resolver: e.resolver,
		CA: e.ca, UpstreamRoots: e.upstreamRoots, OnConnection: func(c egress.Connection) { observe(owner, runID, c) },
		Approval: e.approvalOf(owner)})
}

// Approvable reports whether the operator lets a user approve host
// (network.approvable_hosts names it, on some port).
func (e *Engine) Approvable(host string) bool {
	return approval.Named(e.cfg.Network.ApprovableHosts, host)
}

// Approvals returns the hosts each principal's user approved.
func (e *Engine) Approvals() *approval.Approvals { return e.approvals }

// approvalOf answers a proxy of owner's sandbox about a host off its list:
// approvable when the operator marked it, approved when owner's user
// approved it and the approval holds. It reads the store at each
// connection, so an approval reaches the sandboxes owner already has.
func (e *Engine) approvalOf(owner string) func(host string, port int, tunnel bool) egress.Approval {
	patterns := e.cfg.Network.ApprovableHosts
	if len(patterns) == 0 || owner == "" {
		return nil
	}
	return func(host string, port int, tunnel bool) egress.Approval {
		ok, private := approval.Match(patterns, host, port, tunnel)
		if !ok {
			return egress.Approval{}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		approved, err := e.approvals.Approved(ctx, owner, host)
		if err != nil {
			e.log.Warn("egress approval unreadable: the host stays denied", "principal", owner, "host", host, "err", err)
		}
		return egress.Approval{Approvable: true, Approved: approved, Private: private}
	}
}

// EgressObserver hears of every connection a sandbox made through its
// egress proxy, once it ends: whose sandbox, which run (or "session",
// "install"), and what the connection did (never a secret's value).
type EgressObserver func(owner, runID string, c egress.Connection)

// SetEgressObserver makes o hear of every egress connection from now on;
// call it before serving.
func (e *Engine) SetEgressObserver(o EgressObserver) {
	e.egressObs.Store(&o)
}

func (e *Engine) egressObserver() EgressObserver {
	if o := e.egressObs.Load(); o != nil && *o != nil {
		return *o
	}
	return func(string, string, egress.Connection) {}
}

func describeDenied(r egress.Report) string {
	if len(r.Denied) == 0 {
		return ""
	}
	return fmt.Sprintf("the egress proxy denied: %s", strings.Join(r.Denied, "; "))
}

// The answers to an approval of an egress host, as the audit log says them.
const (
	ApprovalApproved    = "approved"
	ApprovalDeclined    = "declined"
	ApprovalUnavailable = "unavailable"
)

// AuditApproval tells the egress observer (the audit log) what became of
// asking owner's user to approve host after run runID was denied it: a
// Connection of method egress.MethodApproval, allowed when approved.
func (e *Engine) AuditApproval(owner, runID, host, outcome string) {
	e.egressObserver()(owner, runID, egress.Connection{Host: host, Method: egress.MethodApproval,
		Allowed: outcome == ApprovalApproved, Reason: outcome})
}
