// Package gate is what the operator lets a sandbox reach over the network:
// the tier a run or session may ask for ([Gate.Check]), the egress policy
// of a tier for a language (its package registry, the allowlist), the
// operator's secrets with the CA that writes them into requests
// ([Gate.LoadSecrets], [Gate.CheckSecrets]), the hosts a principal's user
// approved, and the egress proxy of each sandbox made from all of these
// ([Gate.Proxy], [Gate.SessionProxy]), whose connections its [Observer]
// hears of. The engine asks it for a run's proxy, the package installer
// for its own, and the sessions for a session's.
package gate

import (
	"context"
	"crypto/x509"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/approval"
	"github.com/mcp-code-runner/mcp-code-runner/internal/fault"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Gate makes the egress proxies of one server's sandboxes.
type Gate struct {
	cfg config.Config
	reg *languages.Registry
	log *slog.Logger

	resolver      egress.Resolver // nil: the host's
	upstreamRoots *x509.CertPool  // nil: the system's

	approvals *approval.Approvals // the hosts each principal's user approved

	secrets  map[string]boundSecret // the operator's, by name; see LoadSecrets
	ca       *egress.CA             // terminates the tunnels to the secrets' hosts
	caBundle []byte                 // the host's roots and the CA, for a run with secrets

	observer atomic.Pointer[Observer]
}

// Options configure a Gate.
type Options struct {
	// Store keeps the hosts users approved, shared by every replica;
	// nil keeps them in this process's memory.
	Store store.Store
	// Resolver looks names up for the proxies instead of the host's
	// resolver (tests: a resolver of their own that records what it was
	// asked).
	Resolver egress.Resolver
	// UpstreamRoots verify the hosts of secrets instead of the system's
	// roots (tests: their own TLS server).
	UpstreamRoots *x509.CertPool
	Logger        *slog.Logger
}

// New returns the gate of cfg's network settings; the secrets' values
// come later, from LoadSecrets.
func New(cfg config.Config, reg *languages.Registry, opts Options) *Gate {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	st := opts.Store
	if st == nil {
		st = store.NewMemory()
	}
	return &Gate{cfg: cfg, reg: reg, log: log, resolver: opts.Resolver, upstreamRoots: opts.UpstreamRoots,
		approvals: approval.New(st, time.Duration(cfg.Network.ApprovalTTLSeconds)*time.Second, nil)}
}

// Check validates a requested tier ("" is none) against the operator's
// maximum and returns it.
func (g *Gate) Check(tier string) (string, error) {
	if tier == "" {
		tier = egress.TierNone
	}
	mostAllowed := g.cfg.Network.MaxTier
	if egress.Rank(tier) < 0 {
		return "", fault.Invalid("network %q is not a tier; use none, packages or allowlist (this server allows up to %s)", tier, mostAllowed)
	}
	if egress.Rank(tier) > egress.Rank(mostAllowed) {
		return "", fault.Invalid("network %q is above this server's maximum, %q; ask for %s or less, or ask the operator to raise network.max_tier", tier, mostAllowed, mostAllowed)
	}
	return tier, nil
}

// policy returns the egress policy of tier for a sandbox of lang (whose
// package registry the packages tier allows), or nil for none.
func (g *Gate) policy(tier string, lang languages.Language) *egress.Policy {
	if tier == "" || tier == egress.TierNone {
		return nil
	}
	p := &egress.Policy{Tier: tier, Private: g.cfg.Network.PrivateHosts,
		MaxBytes: int64(g.cfg.Network.MaxMB) << 20, MaxConnections: g.cfg.Network.MaxConnections}
	if m, ok := g.reg.PackageManager(lang); ok {
		if host, _, err := egress.HostOfURL(registryURL(g.cfg.Packages, m)); err == nil {
			p.Hosts = append(p.Hosts, host)
		}
		p.Hosts = append(p.Hosts, g.cfg.Packages.ExtraHosts...)
	}
	if tier == egress.TierAllowlist {
		p.Hosts = append(p.Hosts, g.cfg.Network.Allowlist...)
	}
	return p
}

// ProxyEnv is what points a sandbox's programs at its egress proxy.
func ProxyEnv() []string {
	u := "http://" + wire.EgressListen
	return []string{"HTTP_PROXY=" + u, "HTTPS_PROXY=" + u, "http_proxy=" + u, "https_proxy=" + u, "NO_PROXY=", "no_proxy="}
}

// Proxy makes the egress proxy of tier, with the secrets it sets, for a
// sandbox of lang that ctx's principal owns, logging as name (the run, or
// "session", or the install), and the environment that points the
// sandbox's programs at it; nil for the tier none. The caller closes it.
func (g *Gate) Proxy(ctx context.Context, tier string, lang languages.Language, name string, secrets []egress.Secret) (*egress.Proxy, []string) {
	p := g.policy(tier, lang)
	if p != nil {
		p.Secrets = secrets
	}
	proxy := g.newProxy(ctx, p, name)
	if proxy == nil {
		return nil, nil
	}
	return proxy, ProxyEnv()
}

// newProxy makes the proxy of one sandbox that ctx's principal owns,
// logging as the run; the egress observer hears of each of its
// connections.
func (g *Gate) newProxy(ctx context.Context, p *egress.Policy, runID string) *egress.Proxy {
	if p == nil {
		return nil
	}
	owner := principal.FromContext(ctx).Name
	observe := g.observe()
	return egress.New(*p, egress.Options{Logger: g.log.With("run", runID, "component", "egress"), Resolver: g.resolver,
		CA: g.ca, UpstreamRoots: g.upstreamRoots, OnConnection: func(c egress.Connection) { observe(owner, runID, c) },
		Approval: g.approvalOf(owner)})
}

// approvalOf answers a proxy of owner's sandbox about a host off its list:
// approvable when the operator marked it, approved when owner's user
// approved it and the approval holds. It reads the store at each
// connection, so an approval reaches the sandboxes owner already has.
func (g *Gate) approvalOf(owner string) func(host string, port int, tunnel bool) egress.Approval {
	patterns := g.cfg.Network.ApprovableHosts
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
		approved, err := g.approvals.Approved(ctx, owner, host)
		if err != nil {
			g.log.Warn("egress approval unreadable: the host stays denied", "principal", owner, "host", host, "err", err)
		}
		return egress.Approval{Approvable: true, Approved: approved, Private: private}
	}
}

// Observer hears of every connection a sandbox made through its
// egress proxy, once it ends: whose sandbox, which run (or "session",
// "install"), and what the connection did (never a secret's value).
type Observer func(owner, runID string, c egress.Connection)

// Observe makes o hear of every egress connection from now on (the audit
// log and the metrics, which the server opens after the gate is made);
// call it before serving.
func (g *Gate) Observe(o Observer) {
	g.observer.Store(&o)
}

func (g *Gate) observe() Observer {
	if o := g.observer.Load(); o != nil && *o != nil {
		return *o
	}
	return func(string, string, egress.Connection) {}
}

// Denied says what the egress proxy denied, for a result's message; "" when
// it denied nothing.
func Denied(r egress.Report) string {
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
func (g *Gate) AuditApproval(owner, runID, host, outcome string) {
	g.observe()(owner, runID, egress.Connection{Host: host, Method: egress.MethodApproval,
		Allowed: outcome == ApprovalApproved, Reason: outcome})
}

// Approvals returns the hosts each principal's user approved, which the
// gate's proxies read at each connection.
func (g *Gate) Approvals() *approval.Approvals { return g.approvals }

// Approvable reports whether the operator lets a user approve host
// (network.approvable_hosts names it, on some port).
func (g *Gate) Approvable(host string) bool {
	return approval.Named(g.cfg.Network.ApprovableHosts, host)
}

// registryURL is the registry m installs from: the packages setting it
// names.
func registryURL(pc config.Packages, m languages.PackageManager) string {
	u, _ := pc.RegistryURL(m.RegistrySetting)
	return u
}
