package transport

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// guard answers 403 to a Host or Origin that is neither loopback nor
// allowed: the defence against DNS rebinding and cross-site requests.
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
		next.ServeHTTP(w, r)
	})
}

// bodyCap answers 413 to a request that declares a body over limit; the
// SDK cuts a longer body it reads.
func bodyCap(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit > 0 && r.ContentLength > limit {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body limit is %d bytes", limit), http.StatusRequestEntityTooLarge)
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
