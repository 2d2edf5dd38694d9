package mcpserver

import (
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/time/rate"
)

// HTTPOptions configure the Streamable HTTP handler.
type HTTPOptions struct {
	// AllowedOrigins are Origin values accepted besides loopback ones.
	AllowedOrigins []string
	// AllowedHosts are Host values accepted besides loopback ones.
	AllowedHosts []string
	// MaxBodyBytes caps a request body.
	MaxBodyBytes int64
	// BearerTokens, when any is set, are accepted in Authorization headers.
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
}

// MetadataPath is where RFC 9728 protected-resource metadata is served.
const MetadataPath = "/.well-known/oauth-protected-resource"

// HTTPHandler serves s over Streamable HTTP in the SDK's stateless mode, so
// that clients of the 2025-11-25 (initialize) and 2026-07-28 (sessionless)
// eras both work. Around it, in order: Host and Origin checks against DNS
// rebinding and cross-site requests, authentication when configured, a
// per-client rate limit, and a cap on the request body. The handler also
// serves the protected-resource metadata when OAuth is configured; mount it
// at "/" (or at both /mcp and MetadataPath).
func HTTPHandler(s *mcp.Server, opts HTTPOptions) http.Handler {
	var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
		Stateless:                    true,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
	})
	h = linkRequestContext(h, max(opts.MaxBodyBytes, 1<<20))
	h = bodyCap(h, opts.MaxBodyBytes)
	if opts.RatePerMinute > 0 {
		h = newRateLimiter(opts.RatePerMinute).wrap(h)
	}
	metadataURL := ""
	if opts.OAuth.Issuer != "" {
		metadataURL = resourceMetadataURL(opts.OAuth.ResourceURL)
	}
	if len(opts.BearerTokens) > 0 || opts.OAuth.Issuer != "" {
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

// verifier accepts the static tokens, then asks the introspection endpoint.
func verifier(opts HTTPOptions) auth.TokenVerifier {
	var intro *introspector
	if opts.OAuth.Issuer != "" && opts.OAuth.IntrospectionURL != "" {
		intro = &introspector{o: opts.OAuth, client: &http.Client{Timeout: 10 * time.Second}, cache: map[string]cached{}}
	}
	return func(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
		for _, t := range opts.BearerTokens {
			if subtle.ConstantTimeCompare([]byte(token), []byte(t)) == 1 {
				return &auth.TokenInfo{UserID: "static-token", Scopes: opts.OAuth.Scopes}, nil
			}
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
		Active bool   `json:"active"`
		Scope  string `json:"scope"`
		Exp    int64  `json:"exp"`
		Sub    string `json:"sub"`
		Iss    string `json:"iss"`
		Aud    any    `json:"aud"`
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
	info := &auth.TokenInfo{UserID: r.Sub, Scopes: strings.Fields(r.Scope)}
	if r.Exp > 0 {
		info.Expiration = time.Unix(r.Exp, 0)
	}
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

// requestIDHeader carries, from the HTTP layer to tool handlers, the key of
// the HTTP request's context in httpContexts. It is always set by the
// server; a client's own value is dropped.
const requestIDHeader = "Mcr-Request-Id"

var (
	httpContexts  sync.Map // request id -> context.Context of the HTTP request
	httpRequestID atomic.Uint64
)

// inflightCalls maps a client's tools/call (principal and JSON-RPC id) to
// the cancel function of its HTTP request, for notifications/cancelled.
var inflightCalls sync.Map

// callCancel boxes a cancel function so that map entries compare by identity.
type callCancel struct{ cancel context.CancelFunc }

// linkRequestContext lets a tool handler see its HTTP request's context,
// and lets a notifications/cancelled stop the call it names. The SDK ties
// handlers to the request only in the 2026 era, and in stateless mode a
// 2025-era notifications/cancelled arrives on another request, in another
// session. With this, closing the request or sending notifications/cancelled
// stops the run in both eras. A cancellation is matched to calls of the same
// client: the same address and the same Authorization header.
func linkRequestContext(next http.Handler, maxBody int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		id := strconv.FormatUint(httpRequestID.Add(1), 36)
		r.Header.Del(requestIDHeader)
		r.Header.Set(requestIDHeader, id)
		httpContexts.Store(id, ctx)
		defer httpContexts.Delete(id)
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
			r.Body.Close()
			if err != nil {
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil {
				principal := clientAddr(r) + "|" + r.Header.Get("Authorization") + "|"
				switch {
				case msg.Method == "tools/call" && len(msg.ID) > 0:
					key, entry := principal+string(msg.ID), &callCancel{cancel}
					inflightCalls.Store(key, entry)
					defer inflightCalls.CompareAndDelete(key, entry)
				case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
					if c, ok := inflightCalls.Load(principal + string(msg.Params.RequestID)); ok {
						c.(*callCancel).cancel()
					}
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func clientAddr(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// withHTTPRequest returns ctx, cancelled also when the HTTP request that
// carried req ends; stop releases it.
func withHTTPRequest(ctx context.Context, req *mcp.CallToolRequest) (context.Context, func()) {
	if req == nil || req.Extra == nil || req.Extra.Header == nil {
		return ctx, func() {}
	}
	v, ok := httpContexts.Load(req.Extra.Header.Get(requestIDHeader))
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(v.(context.Context), cancel)
	return ctx, func() { stop(); cancel() }
}

func bodyCap(next http.Handler, limit int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if limit > 0 && r.ContentLength > limit {
			http.Error(w, fmt.Sprintf("Request Entity Too Large: the body limit is %d bytes", limit), http.StatusRequestEntityTooLarge)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// rateLimiter keeps a token bucket per client.
type rateLimiter struct {
	perMinute int
	mu        sync.Mutex
	buckets   map[string]*bucket
}

type bucket struct {
	lim  *rate.Limiter
	seen time.Time
}

func newRateLimiter(perMinute int) *rateLimiter {
	return &rateLimiter{perMinute: perMinute, buckets: map[string]*bucket{}}
}

// clientKey names the client: its authenticated identity or token, else its
// address.
func clientKey(r *http.Request) string {
	if ti := auth.TokenInfoFromContext(r.Context()); ti != nil && ti.UserID != "" && ti.UserID != "static-token" {
		return "user:" + ti.UserID
	}
	if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok {
		return "token:" + tok
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	return "addr:" + host
}

func (rl *rateLimiter) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := clientKey(r)
		rl.mu.Lock()
		b, ok := rl.buckets[key]
		if !ok {
			if len(rl.buckets) > 100000 {
				rl.buckets = map[string]*bucket{}
			}
			burst := max(1, rl.perMinute/6) // ten seconds' worth
			b = &bucket{lim: rate.NewLimiter(rate.Limit(float64(rl.perMinute)/60), burst)}
			rl.buckets[key] = b
		}
		b.seen = time.Now()
		res := b.lim.Reserve()
		rl.mu.Unlock()
		if d := res.Delay(); d > 0 {
			res.Cancel()
			w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(d.Seconds()))))
			http.Error(w, fmt.Sprintf("Too Many Requests: the limit is %d requests per minute per client", rl.perMinute), http.StatusTooManyRequests)
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
