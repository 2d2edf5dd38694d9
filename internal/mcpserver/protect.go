package mcpserver

import (
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

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
