package mcpserver

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// AllowedOrigins are Origin values accepted besides loopback ones.
	AllowedOrigins []string
	// AllowedHosts are Host values accepted besides loopback ones.
	AllowedHosts []string
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64
	// BearerToken, when set, is required in every request's Authorization.
	BearerToken string
}

// HTTPHandler serves s over Streamable HTTP in the SDK's stateless mode, so
// that clients of the 2025-11-25 (initialize) and 2026-07-28 (sessionless)
// eras both work. Around it: bearer authentication when configured, Origin
// and Host checks against DNS rebinding and cross-site requests, and a cap
// on the request body.
func HTTPHandler(s *mcp.Server, opts HTTPOptions) http.Handler {
	mcpHandler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	return guard(mcpHandler, opts)
}

func guard(next http.Handler, opts HTTPOptions) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !hostAllowed(r.Host, opts.AllowedHosts) {
			http.Error(w, "Forbidden: Host header not allowed (add it to http.allowed_hosts)", http.StatusForbidden)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !originAllowed(origin, opts.AllowedOrigins) {
			http.Error(w, "Forbidden: Origin not allowed (add it to http.allowed_origins)", http.StatusForbidden)
			return
		}
		if opts.BearerToken != "" {
			got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || subtle.ConstantTimeCompare([]byte(got), []byte(opts.BearerToken)) != 1 {
				w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-code-runner"`)
				http.Error(w, "Unauthorized: send Authorization: Bearer <token>", http.StatusUnauthorized)
				return
			}
		}
		if opts.MaxBodyBytes > 0 && r.ContentLength > opts.MaxBodyBytes {
			http.Error(w, "Request Entity Too Large", http.StatusRequestEntityTooLarge)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// IsLoopback reports whether host (a name or address, without port) is a
// loopback one.
func IsLoopback(host string) bool {
	host = strings.Trim(host, "[]")
	if strings.EqualFold(host, "localhost") || strings.HasSuffix(strings.ToLower(host), ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func hostAllowed(hostport string, allowed []string) bool {
	if hostport == "" {
		return false
	}
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	return IsLoopback(host) || slices.ContainsFunc(allowed, func(a string) bool {
		return strings.EqualFold(a, hostport) || strings.EqualFold(a, host)
	})
}

func originAllowed(origin string, allowed []string) bool {
	if slices.ContainsFunc(allowed, func(a string) bool { return strings.EqualFold(strings.TrimSuffix(a, "/"), origin) }) {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return (u.Scheme == "http" || u.Scheme == "https") && IsLoopback(u.Hostname())
}
