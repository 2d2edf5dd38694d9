package approval

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func TestAnApprovalReachesOnlyItsPrincipalUntilTheTTLEnds(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)}
	a := New(store.NewMemory(), time.Hour, c.now)
	exp, err := a.Approve(ctx, "alice", "API.Example.com.")
	if err != nil {
		t.Fatal(err)
	}
	if want := c.t.Add(time.Hour); !exp.Equal(want) {
		t.Fatalf("expires %v, want %v", exp, want)
	}
	for _, tc := range []struct {
		name  string
		after time.Duration
		owner string
		want  []string
	}{
		{"the approving principal reaches the host", 0, "alice", []string{"api.example.com"}},
		{"another principal does not", 0, "bob", nil},
		{"a principal whose name is a prefix does not", 0, "alic", nil},
		{"the approval holds until just before the TTL", time.Hour - time.Second, "alice", []string{"api.example.com"}},
		{"the approval ends with the TTL", time.Hour, "alice", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := c.t
			c.t = c.t.Add(tc.after)
			defer func() { c.t = saved }()
			got, err := a.Hosts(ctx, tc.owner)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("Hosts(%q) = %v, want %v", tc.owner, got, tc.want)
			}
		})
	}
}

func TestApproveRefusesWhatCannotBeKept(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name        string
		ttl         time.Duration
		owner, host string
	}{
		{"no principal", time.Hour, "", "api.example.com"},
		{"no host", time.Hour, "alice", ""},
		{"a TTL of zero", 0, "alice", "api.example.com"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := New(store.NewMemory(), tc.ttl, nil).Approve(ctx, tc.owner, tc.host); err == nil {
				t.Fatal("approved, want an error")
			}
		})
	}
}

func TestApprovedIsTheHostsOwnApprovalUntilItEnds(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)}
	a := New(store.NewMemory(), time.Hour, c.now)
	if _, err := a.Approve(ctx, "alice", "api.example.com"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		after       time.Duration
		owner, host string
		want        bool
	}{
		{"the approved host", 0, "alice", "api.example.com", true},
		{"the same name in capitals with a trailing dot", 0, "alice", "API.example.com.", true},
		{"another host", 0, "alice", "other.example.com", false},
		{"another principal", 0, "bob", "api.example.com", false},
		{"no principal", 0, "", "api.example.com", false},
		{"once the TTL ended", time.Hour, "alice", "api.example.com", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved := c.t
			c.t = c.t.Add(tc.after)
			defer func() { c.t = saved }()
			got, err := a.Approved(ctx, tc.owner, tc.host)
			if err != nil || got != tc.want {
				t.Fatalf("Approved(%q, %q) = %v, %v; want %v", tc.owner, tc.host, got, err, tc.want)
			}
		})
	}
}

func TestMatchIsWhatTheOperatorMarkedOnTheRightPort(t *testing.T) {
	patterns := []string{"api.example.com", "*.example.org", "mirror.internal:8443"}
	for _, tc := range []struct {
		name          string
		host          string
		port          int
		tunnel        bool
		ok, isPrivate bool
	}{
		{"an exact name over TLS", "api.example.com", 443, true, true, false},
		{"an exact name over plain HTTP", "API.example.com.", 80, false, true, false},
		{"an exact name on another port", "api.example.com", 8443, true, false, false},
		{"a tunnel to port 80", "api.example.com", 80, true, false, false},
		{"a name under a wildcard", "a.b.example.org", 443, true, true, false},
		{"the wildcard's own name is not under it", "example.org", 443, true, false, false},
		{"a named host on its port, as a private host", "mirror.internal", 8443, false, true, true},
		{"a named host on another port", "mirror.internal", 443, true, false, false},
		{"an unmarked name", "evil.example.net", 443, true, false, false},
		{"an IP address never", "192.0.2.1", 443, true, false, false},
		{"an IPv6 address never", "[::1]", 443, true, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ok, private := Match(patterns, tc.host, tc.port, tc.tunnel)
			if ok != tc.ok || private != tc.isPrivate {
				t.Fatalf("Match(%q, %d, tunnel %v) = %v, %v; want %v, %v", tc.host, tc.port, tc.tunnel, ok, private, tc.ok, tc.isPrivate)
			}
		})
	}
}

func TestNamedIsAnyHostAPatternNamesOnAnyPort(t *testing.T) {
	patterns := []string{"*.example.com", "api.internal.test:8443"}
	for host, want := range map[string]bool{
		"api.example.com":   true,
		"API.Example.com.":  true,
		"api.internal.test": true,
		"example.org":       false,
		"internal.test":     false,
		"127.0.0.1":         false,
		"":                  false,
	} {
		if got := Named(patterns, host); got != want {
			t.Errorf("Named(%q) = %v, want %v", host, got, want)
		}
	}
}
