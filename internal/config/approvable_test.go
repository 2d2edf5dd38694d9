package config

import (
	"strings"
	"testing"
)

// TestApprovableHostsAreNamesAnOperatorCanVouchFor: an approvable entry is
// a name, a wildcard under a domain, or one named host with a port; an IP
// address, a whole top-level domain, a URL or a bad port is refused with
// what to write instead, and the TTL must be positive and bounded.
func TestApprovableHostsAreNamesAnOperatorCanVouchFor(t *testing.T) {
	cases := []struct {
		name  string
		hosts []string
		ttl   int
		want  string
	}{
		{"a name", []string{"api.example.com"}, 3600, ""},
		{"a wildcard under a domain", []string{"*.example.com"}, 3600, ""},
		{"a named host with a port", []string{"mirror.internal:8443"}, 3600, ""},
		{"an IP address", []string{"192.0.2.1"}, 3600, "an IP address"},
		{"an IP address with a port", []string{"192.0.2.1:80"}, 3600, "an IP address"},
		{"a URL", []string{"https://api.example.com/"}, 3600, "without a scheme or path"},
		{"any host", []string{"*"}, 3600, "want a name like"},
		{"a whole top-level domain", []string{"*.com"}, 3600, "whole top-level domain"},
		{"a wildcard with a port", []string{"*.example.com:443"}, 3600, "a wildcard takes no port"},
		{"a port out of range", []string{"api.example.com:70000"}, 3600, "want 1 to 65535"},
		{"an empty entry", []string{""}, 3600, "want a name like"},
		{"a TTL of zero", nil, 0, "approval_ttl_seconds is 0: it must be positive"},
		{"a TTL past thirty days", nil, MaxApprovalTTLSeconds + 1, "at most"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			cfg.Network.ApprovableHosts = c.hosts
			cfg.Network.ApprovalTTLSeconds = c.ttl
			err := cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}
