// Package transport carries an MCP server to its clients: Streamable HTTP
// behind its guards (Host and Origin, body cap, bearer-token and OAuth
// authentication, rate limit) with cancel routing across requests, and
// stdio that answers no cancelled call. [WithPrincipal] makes the
// authenticated principal the one every handler sees.
package transport

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/tasks"
)

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// AllowedOrigins are Origin values accepted besides loopback ones.
	AllowedOrigins []string
	// AllowedHosts are Host values accepted besides loopback ones.
	AllowedHosts []string
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64
	// Tokens are the named bearer tokens accepted in Authorization headers;
	// each request is its token's principal.
	Tokens []config.Token
	// BearerTokens are more accepted tokens, each named by its hash (see
	// config.BareTokenName).
	BearerTokens []string
	// OAuth, when its Issuer is set, makes the server an OAuth 2.1 resource
	// server: it serves RFC 9728 metadata and accepts tokens its
	// introspection endpoint (RFC 7662) reports active.
	OAuth OAuthOptions
	// RatePerMinute limits requests per client (token, or address without
	// one); 0 means no limit.
	RatePerMinute int
}

// OAuthOptions describe the authorization server protecting /mcp.
type OAuthOptions struct {
	Issuer           string
	IntrospectionURL string
	ClientID         string
	ClientSecret     string
	// ResourceURL is this server's public /mcp URL, the resource identifier.
	ResourceURL string
	Scopes      []string
	// OperatorScope, when set, gives tokens with this scope the operator
	// role.
	OperatorScope string
}

// MetadataPath is where RFC 9728 protected-resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// HTTPHandler serves s over Streamable HTTP in the SDK's stateless mode, so
// that clients of the 2025-11-25 (initialize) and 2026-07-28 (sessionless)
// eras both work. Around it, in order: Host and Origin checks against DNS
// rebinding and cross-site requests, authentication when configured (each
// request then carries its token's principal), a per-client rate limit,
// and a cap on the request body. The handler also serves the
// protected-resource metadata when OAuth is configured; mount it at "/" (or
// at both /mcp and MetadataPath).
func HTTPHandler(s *mcp.Server, opts HTTPOptions) http.Handler {
	linker := newCallLinker(max(opts.MaxBodyBytes, 1<<20))
	s.AddReceivingMiddleware(linker.middleware)
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
		// guard checks every request's Host against loopback names and
		// http.allowed_hosts, whatever address it arrived on. The SDK's own
		// check refuses any non-loopback Host that arrives on a loopback
		// address, which would refuse an allowed name coming through a
		// loopback hop: kubectl port-forward, a sidecar proxy.
		DisableLocalhostProtection: true,
	})
	h = linker.wrap(tasks.HTTP(h))
	h = bodyCap(h, opts.MaxBodyBytes)
	if opts.RatePerMinute > 0 {
		h = newRateLimiter(opts.RatePerMinute).wrap(h)
	}
	metadataURL := ""
	if opts.OAuth.Issuer != "" {
		metadataURL = resourceMetadataURL(opts.OAuth.ResourceURL)
	}
	if len(opts.Tokens) > 0 || len(opts.BearerTokens) > 0 || opts.OAuth.Issuer != "" {
		h = auth.RequireBearerToken(verifier(opts), &auth.RequireBearerTokenOptions{
			ResourceMetadataURL:    metadataURL,
			Scopes:                 opts.OAuth.Scopes,
			AllowMissingExpiration: true,
			ClockSkew:              30 * time.Second,
		})(h)
	}
	h = guard(h, opts)
	if opts.OAuth.Issuer == "" {
		return h
	}
	mux := http.NewServeMux()
	meta := auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               opts.OAuth.ResourceURL,
		AuthorizationServers:   []string{opts.OAuth.Issuer},
		ScopesSupported:        opts.OAuth.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "mcp-code-runner",
	})
	mux.Handle(MetadataPath, meta)
	mux.Handle(MetadataPath+"/", meta)
	mux.Handle("/", h)
	return mux
}

// resourceMetadataURL is the RFC 9728 metadata URL of a resource URL:
// the well-known path inserted before the resource's path.
func resourceMetadataURL(resource string) string {
	u, err := url.Parse(resource)
	if err != nil || u.Host == "" {
		return MetadataPath
	}
	path := strings.TrimSuffix(u.Path, "/")
	return u.Scheme + "://" + u.Host + MetadataPath + path
}
