package transport

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// principalKey is where a verified token's principal sits in
// auth.TokenInfo.Extra; TokenInfo.UserID holds its name too.
const principalKey = "mcr.principal"

// tokenInfo is what a verified token stands for.
func tokenInfo(p principal.Principal, scopes []string, exp time.Time) *auth.TokenInfo {
	return &auth.TokenInfo{UserID: p.Name, Scopes: scopes, Expiration: exp, Extra: map[string]any{principalKey: p}}
}

// principalOf is the principal a verified token stands for.
func principalOf(ti *auth.TokenInfo) principal.Principal {
	if p, ok := ti.Extra[principalKey].(principal.Principal); ok {
		return p
	}
	// Not from this package's verifier (which always names one): the
	// token's user, never the local principal.
	return principal.Principal{Name: "user:" + ti.UserID}
}

// WithPrincipal puts the principal of the request's bearer token into the
// context every handler sees (tools, resources, completion). Requests
// without one (stdio, an unauthenticated loopback listener) are the local
// principal's.
func WithPrincipal(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if ex := req.GetExtra(); ex != nil && ex.TokenInfo != nil {
			ctx = principal.WithContext(ctx, principalOf(ex.TokenInfo))
		}
		return next(ctx, method, req)
	}
}

// staticTokens returns the configured tokens: opts.Tokens, and each of
// opts.BearerTokens named by its hash.
func staticTokens(opts HTTPOptions) []config.Token {
	out := slices.Clone(opts.Tokens)
	for _, t := range opts.BearerTokens {
		out = append(out, config.Token{Name: config.BareTokenName(t), Value: t})
	}
	return out
}

// verifier accepts the static tokens, then asks the introspection endpoint.
func verifier(opts HTTPOptions) auth.TokenVerifier {
	tokens := staticTokens(opts)
	var intro *introspector
	if opts.OAuth.Issuer != "" && opts.OAuth.IntrospectionURL != "" {
		intro = &introspector{o: opts.OAuth, client: &http.Client{Timeout: 10 * time.Second}, cache: map[string]cached{}}
	}
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		// Every token is compared, so that the time taken does not tell
		// which one (or whether any) matched.
		match := -1
		for i, t := range tokens {
			if subtle.ConstantTimeCompare([]byte(token), []byte(t.Value)) == 1 {
				match = i
			}
		}
		if match >= 0 {
			t := tokens[match]
			return tokenInfo(principal.Principal{Name: t.Name, Operator: t.Operator}, opts.OAuth.Scopes, time.Time{}), nil
		}
		if intro != nil {
			return intro.verify(ctx, token)
		}
		return nil, fmt.Errorf("%w: unknown bearer token", auth.ErrInvalidToken)
	}
}

type cached struct {
	info *auth.TokenInfo
	at   time.Time
}

// introspector validates tokens with RFC 7662 token introspection, keeping
// answers for a minute (or until the token expires).
type introspector struct {
	o      OAuthOptions
	client *http.Client
	mu     sync.Mutex
	cache  map[string]cached
}

func (in *introspector) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	in.mu.Lock()
	c, ok := in.cache[token]
	in.mu.Unlock()
	if ok && time.Since(c.at) < time.Minute && (c.info.Expiration.IsZero() || time.Now().Before(c.info.Expiration)) {
		return c.info, nil
	}
	form := url.Values{"token": {token}, "token_type_hint": {"access_token"}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, in.o.IntrospectionURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "application/json")
	if in.o.ClientID != "" {
		req.SetBasicAuth(url.QueryEscape(in.o.ClientID), url.QueryEscape(in.o.ClientSecret))
	}
	resp, err := in.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("token introspection: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("token introspection answered %s", resp.Status)
	}
	var r struct {
		Active   bool   `json:"active"`
		Scope    string `json:"scope"`
		Exp      int64  `json:"exp"`
		Sub      string `json:"sub"`
		ClientID string `json:"client_id"`
		Iss      string `json:"iss"`
		Aud      any    `json:"aud"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("token introspection: %w", err)
	}
	if !r.Active {
		return nil, fmt.Errorf("%w: token is not active", auth.ErrInvalidToken)
	}
	if r.Iss != "" && r.Iss != in.o.Issuer {
		return nil, fmt.Errorf("%w: token from another issuer", auth.ErrInvalidToken)
	}
	if in.o.ResourceURL != "" && r.Aud != nil && !audienceHas(r.Aud, in.o.ResourceURL) {
		return nil, fmt.Errorf("%w: token is for another audience", auth.ErrInvalidToken)
	}
	// The subject owns the work; a token of a client acting for itself
	// (client credentials, no subject) is its client's.
	name := r.Sub
	if name == "" {
		name = r.ClientID
	}
	if name == "" {
		return nil, fmt.Errorf("%w: introspection names neither a subject (sub) nor a client (client_id) to own the work", auth.ErrInvalidToken)
	}
	scopes := strings.Fields(r.Scope)
	p := principal.Principal{Name: name, ClientID: r.ClientID,
		Operator: in.o.OperatorScope != "" && slices.Contains(scopes, in.o.OperatorScope)}
	var exp time.Time
	if r.Exp > 0 {
		exp = time.Unix(r.Exp, 0)
	}
	info := tokenInfo(p, scopes, exp)
	in.mu.Lock()
	if len(in.cache) > 10000 {
		in.cache = map[string]cached{}
	}
	in.cache[token] = cached{info: info, at: time.Now()}
	in.mu.Unlock()
	return info, nil
}

func audienceHas(aud any, want string) bool {
	switch a := aud.(type) {
	case string:
		return a == want
	case []any:
		for _, x := range a {
			if s, ok := x.(string); ok && s == want {
				return true
			}
		}
	}
	return false
}
