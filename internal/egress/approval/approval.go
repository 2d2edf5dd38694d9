// Package approval keeps the egress hosts a principal's user approved: a
// host the operator marked approvable that a run was denied, approved for
// that principal only until the operator's TTL ends. The approvals live in
// the state store, so every replica sees them, under the principal's name,
// so one principal's approval is never another's. Match says which hosts
// the operator lets a user approve.
package approval

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// prefix is the kind of record of approvals in the state store.
const prefix = "egress-approvals/"

// Approvals reads and writes the approvals of every principal.
type Approvals struct {
	st  store.Store
	ttl time.Duration
	now func() time.Time
}

// New returns the approvals kept in st, each lasting ttl; now is the clock
// that decides expiry (time.Now when nil; tests inject their own).
func New(st store.Store, ttl time.Duration, now func() time.Time) *Approvals {
	if now == nil {
		now = time.Now
	}
	return &Approvals{st: st, ttl: ttl, now: now}
}

type record struct {
	Host    string    `json:"host"`
	Expires time.Time `json:"expires"`
}

func key(owner, host string) string {
	return prefix + url.PathEscape(owner) + "/" + url.PathEscape(host)
}

// Approve records that owner's user approved host (a name, lower case) and
// returns when the approval ends. The store's TTL removes the record; the
// expiry it carries is what Hosts checks, so an injected clock decides.
func (a *Approvals) Approve(ctx context.Context, owner, host string) (time.Time, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if owner == "" || host == "" {
		return time.Time{}, errors.New("approval: a principal and a host are needed")
	}
	if a.ttl <= 0 {
		return time.Time{}, errors.New("approval: the operator's approval TTL is not above zero, so no approval is kept")
	}
	exp := a.now().Add(a.ttl)
	b, err := json.Marshal(record{Host: host, Expires: exp})
	if err != nil {
		return time.Time{}, err
	}
	if err := a.st.Put(ctx, key(owner, host), b, a.ttl); err != nil {
		return time.Time{}, fmt.Errorf("approval: recording %s for %s: %w", host, owner, err)
	}
	return exp, nil
}

// Hosts returns the hosts owner's user approved whose approval has not
// ended, sorted.
func (a *Approvals) Hosts(ctx context.Context, owner string) ([]string, error) {
	if owner == "" {
		return nil, nil
	}
	entries, err := a.st.List(ctx, prefix+url.PathEscape(owner)+"/")
	if err != nil {
		return nil, fmt.Errorf("approval: reading the approvals of %s: %w", owner, err)
	}
	now := a.now()
	var out []string
	for _, e := range entries {
		if r, ok := inForce(e.Value, now); ok {
			out = append(out, r.Host)
		}
	}
	sort.Strings(out)
	return out, nil
}

// Approved reports whether owner's user approved host and the approval
// has not ended.
func (a *Approvals) Approved(ctx context.Context, owner, host string) (bool, error) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if owner == "" || host == "" {
		return false, nil
	}
	b, err := a.st.Get(ctx, key(owner, host))
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("approval: reading %s for %s: %w", host, owner, err)
	}
	var r record
	if json.Unmarshal(b, &r) != nil {
		return false, nil
	}
	return a.now().Before(r.Expires), nil
}

// TTL is how long an approval lasts.
func (a *Approvals) TTL() time.Duration { return a.ttl }

// Named reports whether any of the operator's approvable patterns names
// host, on whatever port: a host a user may be asked about at all.
func Named(patterns []string, host string) bool {
	for _, port := range []int{443, 80} {
		if ok, _ := Match(patterns, host, port, port == 443); ok {
			return true
		}
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, p := range patterns {
		if h, _, err := net.SplitHostPort(strings.ToLower(strings.TrimSpace(p))); err == nil && strings.TrimSuffix(h, ".") == host && net.ParseIP(strings.Trim(host, "[]")) == nil {
			return true
		}
	}
	return false
}

// Match reports whether the operator's approvable patterns let a user
// approve host on port: a name or "*.example.com" on the port of the
// connection's kind (443 for a tunnel, 80 for plain HTTP), as an allowlist
// entry would be reached; or "host:port" on that port, reached like a
// network.private_hosts entry (private). IP addresses are never
// approvable: approval is of names.
func Match(patterns []string, host string, port int, tunnel bool) (ok, private bool) {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "" || net.ParseIP(strings.Trim(host, "[]")) != nil {
		return false, false
	}
	defaultPort := 80
	if tunnel {
		defaultPort = 443
	}
	for _, p := range patterns {
		p = strings.ToLower(strings.TrimSpace(p))
		if h, ps, err := net.SplitHostPort(p); err == nil {
			if n, err := strconv.Atoi(ps); err == nil && n == port && strings.TrimSuffix(h, ".") == host {
				return true, true
			}
			continue
		}
		if port == defaultPort && egress.MatchHost([]string{p}, host) {
			return true, false
		}
	}
	return false, false
}
