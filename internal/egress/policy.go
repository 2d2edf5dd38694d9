// Package egress is the only way out of a sandbox that was given network
// access: an HTTP proxy the server runs for that one sandbox, reached over a
// Unix socket bind-mounted into it (the sandbox itself keeps network mode
// none: it has no interface but loopback, no route and no DNS). The proxy
// allows HTTP requests and CONNECT tunnels by host name against the
// sandbox's list, checks that a tunnel's TLS server name is the host it
// asked for, resolves names itself and never dials loopback, link-local,
// private or metadata addresses unless the operator named the host, and
// bounds the bytes and connections of the sandbox. Every decision is logged
// and the denied hosts are reported with the run's result.
package egress

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
)

// The network tiers, from the most closed.
const (
	// TierNone: no network at all (network mode none, no proxy).
	TierNone = "none"
	// TierPackages: the package registries of the run's language only.
	TierPackages = "packages"
	// TierAllowlist: the operator's list of domains.
	TierAllowlist = "allowlist"
)

// Tiers lists the tiers in order; a tier may be asked for when it is at
// most the operator's maximum.
var Tiers = []string{TierNone, TierPackages, TierAllowlist}

// Rank is the order of tier among Tiers, or -1 for an unknown tier.
func Rank(tier string) int {
	for i, t := range Tiers {
		if t == tier {
			return i
		}
	}
	return -1
}

// Policy is what one sandbox's proxy allows.
type Policy struct {
	// Tier names the policy in logs and results.
	Tier string
	// Hosts are the names the sandbox may reach: exact names, or
	// "*.example.com" for any name under example.com (not example.com
	// itself). Tunnels (CONNECT) go to port 443 only; plain HTTP to port 80.
	Hosts []string
	// Private are hosts the operator named as mirrors: "host" or
	// "host:port". They may resolve to (or be) loopback, link-local or
	// private addresses, and a named port is allowed for them besides 443
	// and 80.
	Private []string
	// MaxBytes bounds the bytes the sandbox sends and receives through the
	// proxy in all; 0 means no bound.
	MaxBytes int64
	// MaxConnections bounds the connections (tunnels and requests) the
	// sandbox opens in all; 0 means no bound.
	MaxConnections int
	// Secrets are the secrets the run asked for: the proxy terminates the
	// tunnels to their hosts (with Options.CA) and sets their headers.
	// Their hosts must also be allowed by Hosts or Private.
	Secrets []Secret
}

// HostOfURL returns the host and port ("" when the URL has none) of a
// registry URL, for the policy's lists.
func HostOfURL(raw string) (host, port string, err error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", "", fmt.Errorf("%q is not an http or https URL with a host", raw)
	}
	return strings.ToLower(u.Hostname()), u.Port(), nil
}

// MatchHost reports whether host is allowed by one of the patterns: exact
// names, or "*.x" for any name under x (not x itself).
func MatchHost(patterns []string, host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, p := range patterns {
		p = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(p)), ".")
		if p == "" {
			continue
		}
		if rest, ok := strings.CutPrefix(p, "*."); ok {
			if strings.HasSuffix(host, "."+rest) {
				return true
			}
			continue
		}
		if p == host {
			return true
		}
	}
	return false
}

// privateEntry reports whether host:port is one the operator named as a
// mirror: its host is named, and its port too when the entry has one, or
// port is the default one of the request.
func (p Policy) privateEntry(host string, port int, defaultPort int) bool {
	host = strings.ToLower(host)
	for _, e := range p.Private {
		e = strings.ToLower(strings.TrimSpace(e))
		h, ps, err := net.SplitHostPort(e)
		if err != nil {
			h, ps = strings.Trim(e, "[]"), ""
		}
		if h != host {
			continue
		}
		if ps == "" {
			if port == defaultPort {
				return true
			}
			continue
		}
		if n, err := strconv.Atoi(ps); err == nil && n == port {
			return true
		}
	}
	return false
}

// check decides whether a connection to host:port is allowed, and says
// why not. tunnel is a CONNECT (TLS), else plain HTTP.
func (p Policy) check(host string, port int, tunnel bool) (allowed, private bool, reason string) {
	defaultPort := 80
	if tunnel {
		defaultPort = 443
	}
	if p.privateEntry(host, port, defaultPort) {
		return true, true, ""
	}
	if ip := net.ParseIP(strings.Trim(host, "[]")); ip != nil {
		return false, false, "an IP address; only host names on the list may be reached"
	}
	if !MatchHost(p.Hosts, host) {
		return false, false, fmt.Sprintf("%s is not on the %s list (%s)", host, p.Tier, strings.Join(p.sortedHosts(), ", "))
	}
	if port != defaultPort {
		if tunnel {
			return false, false, fmt.Sprintf("port %d: tunnels go to port 443 only", port)
		}
		return false, false, fmt.Sprintf("port %d: plain HTTP goes to port 80 only", port)
	}
	return true, false, ""
}

func (p Policy) sortedHosts() []string {
	out := append([]string(nil), p.Hosts...)
	sort.Strings(out)
	return out
}

// blockedIP reports why ip may not be dialled for a host the operator did
// not name, or "" when it may.
func blockedIP(ip net.IP) string {
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local (cloud metadata lives there)"
	case ip.IsPrivate():
		return "private"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	}
	for _, n := range extraBlocked {
		if n.Contains(ip) {
			return "reserved"
		}
	}
	return ""
}

// extraBlocked are ranges net.IP has no predicate for: "this network",
// carrier-grade NAT, the IETF protocol assignments, benchmarking (used for
// private networks, this project's test cluster among them), the reserved
// and broadcast block, NAT64 and the IPv4-mapped and -translated IPv6 forms (which could
// carry a private IPv4 address), and 6to4 and Teredo.
var extraBlocked = func() []*net.IPNet {
	var out []*net.IPNet
	for _, c := range []string{"0.0.0.0/8", "100.64.0.0/10", "192.0.0.0/24", "198.18.0.0/15", "240.0.0.0/4", "64:ff9b::/96", "64:ff9b:1::/48",
		"::ffff:0:0:0/96", "2001::/32", "2002::/16", "100::/64"} {
		_, n, err := net.ParseCIDR(c)
		if err == nil {
			out = append(out, n)
		}
	}
	return out
}()

// Names reports whether the policy lets a sandbox reach host, a name as a
// secret's hosts give it: listed in Hosts, or named in Private (any port).
// A pattern "*.example.com" needs a pattern of Hosts that covers every name
// under example.com.
func (p Policy) Names(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(strings.TrimSpace(host)), ".")
	if rest, ok := strings.CutPrefix(host, "*."); ok {
		// No exact entry holds this label, so only a covering pattern
		// matches it.
		return MatchHost(p.Hosts, "mcr-any-name-under."+rest)
	}
	if MatchHost(p.Hosts, host) {
		return true
	}
	for _, e := range p.Private {
		e = strings.ToLower(strings.TrimSpace(e))
		h, _, err := net.SplitHostPort(e)
		if err != nil {
			h = strings.Trim(e, "[]")
		}
		if h == host {
			return true
		}
	}
	return false
}
