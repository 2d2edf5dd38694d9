package config

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
)

// Secret is a credential the egress proxy writes into the requests a
// sandbox sends to its hosts over HTTPS (internal/egress): a run names it
// and holds only a placeholder. Its value is never written here: it comes
// from an environment variable of the server or a file.
type Secret struct {
	// Name is what a run asks for: lower-case letters, digits, - and _.
	Name string `json:"name"`
	// Hosts are the names it is sent to, like the allowlist's entries
	// ("api.example.com", "*.example.com").
	Hosts []string `json:"hosts"`
	// Header is the request header the proxy sets, e.g. Authorization.
	Header string `json:"header"`
	// Format is the header's value with {value} for the secret, e.g.
	// "Bearer {value}"; empty means the value alone.
	Format string `json:"format"`
	// ValueEnv names the server's environment variable holding the value.
	ValueEnv string `json:"value_env"`
	// ValueFile is a file holding the value (a trailing newline is not
	// part of it).
	ValueFile string `json:"value_file"`
	// Principals are the clients that may ask for the secret, by their
	// principal names; empty means every client of the server.
	Principals []string `json:"principals"`
}

// Allows reports whether the principal called name may ask for s.
func (s Secret) Allows(name string) bool {
	return len(s.Principals) == 0 || slices.Contains(s.Principals, name)
}

var (
	secretName = regexp.MustCompile(`^[a-z][a-z0-9_-]{0,63}$`)
	// headerName is an HTTP field name (RFC 9110's token).
	headerName = regexp.MustCompile("^[A-Za-z0-9!#$%&'*+.^_`|~-]+$")
)

// headersNeverSet are headers a secret may not replace: they route or frame
// the request, or belong to the proxy.
var headersNeverSet = map[string]bool{"Host": true, "Content-Length": true, "Transfer-Encoding": true, "Connection": true,
	"Proxy-Authorization": true, "Proxy-Connection": true, "Upgrade": true, "Te": true, "Trailer": true}

// validateSecrets checks each secret's fields; the values are read by
// Secret.Value when the server starts.
func validateSecrets(secrets []Secret) []error {
	var errs []error
	seen := map[string]bool{}
	for i, s := range secrets {
		at := fmt.Sprintf("network.secrets[%d]", i)
		if s.Name != "" {
			at = fmt.Sprintf("network.secrets %q", s.Name)
		}
		switch {
		case !secretName.MatchString(s.Name):
			errs = append(errs, fmt.Errorf("%s: name %q: use lower-case letters, digits, - and _, starting with a letter", at, s.Name))
		case seen[s.Name]:
			errs = append(errs, fmt.Errorf("%s: the name is given twice", at))
		}
		seen[s.Name] = true
		if len(s.Hosts) == 0 {
			errs = append(errs, fmt.Errorf("%s: hosts is empty; name the hosts the secret is sent to, like api.example.com", at))
		}
		for _, h := range s.Hosts {
			if h == "" || h == "*" || strings.ContainsAny(h, ":/ ") {
				errs = append(errs, fmt.Errorf("%s: host %q: want a name like api.example.com or *.example.com, without a scheme, port or path", at, h))
			}
		}
		header := http.CanonicalHeaderKey(s.Header)
		switch {
		case !headerName.MatchString(s.Header):
			errs = append(errs, fmt.Errorf("%s: header %q: want a header name like Authorization", at, s.Header))
		case headersNeverSet[header]:
			errs = append(errs, fmt.Errorf("%s: header %s routes or frames the request and cannot carry a secret", at, header))
		}
		if s.Format != "" && !strings.Contains(s.Format, "{value}") {
			errs = append(errs, fmt.Errorf("%s: format %q has no {value} where the secret goes, like %q", at, s.Format, "Bearer {value}"))
		}
		for _, p := range s.Principals {
			if strings.TrimSpace(p) == "" {
				errs = append(errs, fmt.Errorf("%s: principals holds an empty name; list the principal names that may use the secret, or leave principals out for every client", at))
			}
		}
		if (s.ValueEnv == "") == (s.ValueFile == "") {
			errs = append(errs, fmt.Errorf("%s: give the value's source as value_env (an environment variable) or value_file, exactly one; the value itself never goes in the configuration", at))
		}
	}
	return errs
}

// Value reads the secret's value from its environment variable (with
// getenv) or its file.
func (s Secret) Value(getenv func(string) string) (string, error) {
	var v string
	if s.ValueEnv != "" {
		if v = getenv(s.ValueEnv); v == "" {
			return "", fmt.Errorf("secret %q: the environment variable %s is empty or unset; set it in the server's environment", s.Name, s.ValueEnv)
		}
	} else {
		data, err := os.ReadFile(s.ValueFile)
		if err != nil {
			return "", fmt.Errorf("secret %q: reading value_file: %w", s.Name, err)
		}
		if v = strings.TrimRight(string(data), "\r\n"); v == "" {
			return "", fmt.Errorf("secret %q: value_file %s is empty", s.Name, s.ValueFile)
		}
	}
	if strings.ContainsAny(v, "\r\n\x00") {
		return "", fmt.Errorf("secret %q: the value holds a line break or NUL byte, which a header cannot carry", s.Name)
	}
	return v, nil
}
