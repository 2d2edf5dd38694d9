package transport

import (
	"context"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// Tokens checks bearer tokens the way /mcp does (the configured tokens,
// then OAuth introspection), for pages beside /mcp that browsers reach:
// a browser cannot send an Authorization header on a navigation, so such a
// page takes the token once (a login form) and keeps its own session.
type Tokens struct {
	verify   auth.TokenVerifier
	required bool
}

// NewTokens returns the token check of a listener with opts.
func NewTokens(opts HTTPOptions) *Tokens {
	return &Tokens{
		verify:   verifier(opts),
		required: len(opts.Tokens) > 0 || len(opts.BearerTokens) > 0 || opts.OAuth.Issuer != "",
	}
}

// Required reports whether the listener authenticates its requests. A
// listener that does not is a loopback one with a single user (the server
// refuses to listen beyond loopback without authentication).
func (t *Tokens) Required() bool { return t.required }

// Verify returns the principal token stands for, or an error when it is
// not a token of this listener.
func (t *Tokens) Verify(ctx context.Context, token string, r *http.Request) (principal.Principal, error) {
	ti, err := t.verify(ctx, token, r)
	if err != nil {
		return principal.Principal{}, err
	}
	return principalOf(ti), nil
}

// Guard puts next behind the Host and Origin checks of /mcp (against DNS
// rebinding and cross-site requests), without authentication: for pages
// that authenticate their requests themselves.
func Guard(next http.Handler, opts HTTPOptions) http.Handler { return guard(next, opts) }
