package transport

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// operatorsOnlyText answers a client token on an operators' endpoint.
const operatorsOnlyText = "this endpoint shows every client's work (metrics name each principal), so only a token with the operator role may read it: " +
	"use a token named in auth operators (--operators NAME) or an OAuth token with the operator scope (oauth_operator_scope), " +
	"or scrape the separate metrics listener (metrics.addr)\n"

// Protect puts next behind the checks /mcp has: Host and Origin, then the
// bearer token or OAuth verification when either is configured. For
// endpoints beside /mcp that must not be open to whoever reaches the
// listener, like /metrics.
func Protect(next http.Handler, opts HTTPOptions) http.Handler {
	h := next
	if len(opts.Tokens) > 0 || len(opts.BearerTokens) > 0 || opts.OAuth.Issuer != "" {
		metadataURL := ""
		if opts.OAuth.Issuer != "" {
			metadataURL = resourceMetadataURL(opts.OAuth.ResourceURL)
		}
		h = auth.RequireBearerToken(verifier(opts), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL:    metadataURL,
			Scopes:                 opts.OAuth.Scopes,
			AllowMissingExpiration: true,
			ClockSkew:              30 * time.Second,
		})(h)
	}
	return guard(h, opts)
}

// ProtectForOperators is Protect for endpoints that show every principal's
// work, like /metrics (whose series name principals): when requests carry
// tokens, only a token with the operator role gets through; a client's
// token gets 403. Without authentication (a loopback listener for one
// user) there is no other principal to see.
func ProtectForOperators(next http.Handler, opts HTTPOptions) http.Handler {
	operatorsOnly := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && !principalOf(ti).Operator {
			http.Error(w, operatorsOnlyText, http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
	return Protect(operatorsOnly, opts)
}
