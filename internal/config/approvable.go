package config

import (
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
)

// approvableName is a host name of an approvable entry: labels of letters,
// digits and hyphens, an optional leading "*." for the names under it.
var approvableName = regexp.MustCompile(`^(\*\.)?([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$`)

// validateApprovable checks network.approvable_hosts and
// network.approval_ttl_seconds.
func validateApprovable(n Network) []error {
	var errs []error
	for _, h := range n.ApprovableHosts {
		if err := checkApprovable(h); err != nil {
			errs = append(errs, fmt.Errorf("network.approvable_hosts entry %q: %v", h, err))
		}
	}
	if n.ApprovalTTLSeconds <= 0 {
		errs = append(errs, fmt.Errorf("network.approval_ttl_seconds is %d: it must be positive (seconds an approval lasts, like 3600)", n.ApprovalTTLSeconds))
	} else if n.ApprovalTTLSeconds > MaxApprovalTTLSeconds {
		errs = append(errs, fmt.Errorf("network.approval_ttl_seconds is %d: at most %d (30 days); an approval is meant to be asked for again", n.ApprovalTTLSeconds, MaxApprovalTTLSeconds))
	}
	return errs
}

// MaxApprovalTTLSeconds bounds how long an approval of a host lasts.
const MaxApprovalTTLSeconds = 30 * 24 * 3600

// checkApprovable says what is wrong with one approvable entry: a name,
// "*.example.com", or "host:port" (no wildcard with a port).
func checkApprovable(h string) error {
	want := "want a name like api.example.com, *.example.com, or host:port for a host on a private address"
	e := strings.ToLower(strings.TrimSpace(h))
	if e == "" || strings.Contains(e, "/") {
		return fmt.Errorf("%s, without a scheme or path", want)
	}
	name := e
	if host, port, err := net.SplitHostPort(e); err == nil {
		n, perr := strconv.Atoi(port)
		if perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("port %q: want 1 to 65535", port)
		}
		if strings.HasPrefix(host, "*.") {
			return fmt.Errorf("a wildcard takes no port: the port is for one named host on a private address")
		}
		name = host
	}
	if net.ParseIP(strings.Trim(name, "[]")) != nil {
		return fmt.Errorf("an IP address: approvals are of host names; %s", want)
	}
	if !approvableName.MatchString(name) {
		return fmt.Errorf("%s", want)
	}
	if rest, ok := strings.CutPrefix(name, "*."); ok && !strings.Contains(rest, ".") {
		return fmt.Errorf("*.%s would cover a whole top-level domain; name a domain under it, like *.example.%s", rest, rest)
	}
	return nil
}
