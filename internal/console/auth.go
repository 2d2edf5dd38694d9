package console

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// cookieName is the console session's cookie.
const cookieName = "mcr_console"

// loginTTL is how long a console session lasts (at most: an OAuth token's
// own expiry is not re-checked until the next login).
const loginTTL = 8 * time.Hour

// maxLogins bounds the console sessions kept; the oldest go first.
const maxLogins = 1000

// logins are the console's sessions: a random id in the cookie, the
// operator and the CSRF token on the server. The token the operator typed
// is not kept.
type logins struct {
	mu sync.Mutex
	m  map[string]login
	// local is the CSRF token of a listener without authentication.
	local string
}

type login struct {
	p       principal.Principal
	csrf    string
	expires time.Time
}

func newLogins() *logins { return &logins{m: map[string]login{}, local: randomID()} }

func randomID() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand panics instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

func (l *logins) add(p principal.Principal) (id string, in login) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	for k, v := range l.m {
		if now.After(v.expires) {
			delete(l.m, k)
		}
	}
	for len(l.m) >= maxLogins {
		var oldest string
		for k, v := range l.m {
			if oldest == "" || v.expires.Before(l.m[oldest].expires) {
				oldest = k
			}
		}
		delete(l.m, oldest)
	}
	id, in = randomID(), login{p: p, csrf: randomID(), expires: now.Add(loginTTL)}
	l.m[id] = in
	return id, in
}

func (l *logins) get(id string) (login, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	in, ok := l.m[id]
	if !ok || time.Now().After(in.expires) {
		delete(l.m, id)
		return login{}, false
	}
	return in, true
}

func (l *logins) remove(id string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.m, id)
}

// operator lets through an operator's request, with its visitor in the
// context: 401 (the login page) without credentials or with a token the
// listener does not know, 403 for a principal without the operator role.
func (c *Console) operator(next http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var v visitor
		switch {
		case !c.tokens.Required():
			v = visitor{p: principal.Local(), csrf: c.logins.local}
		case bearer(r) != "":
			p, err := c.tokens.Verify(r.Context(), bearer(r), r)
			if err != nil {
				c.deny(w, r, http.StatusUnauthorized, "that token is not one of this server's")
				return
			}
			v = visitor{p: p}
		default:
			ck, err := r.Cookie(cookieName)
			if err != nil {
				c.deny(w, r, http.StatusUnauthorized, "")
				return
			}
			in, ok := c.logins.get(ck.Value)
			if !ok {
				c.deny(w, r, http.StatusUnauthorized, "your console session ended: sign in again")
				return
			}
			v = visitor{p: in.p, csrf: in.csrf}
		}
		if c.tokens.Required() && !v.p.Operator {
			c.deny(w, r, http.StatusForbidden, "")
			return
		}
		next(w, r.WithContext(context.WithValue(r.Context(), operatorKey{}, v)))
	})
}

func bearer(r *http.Request) string {
	h := r.Header.Get("Authorization")
	if len(h) > 7 && strings.EqualFold(h[:7], "bearer ") {
		return strings.TrimSpace(h[7:])
	}
	return ""
}

// deny answers status with the login page (401) or the page that says only
// operators get in (403).
func (c *Console) deny(w http.ResponseWriter, r *http.Request, status int, msg string) {
	if status == http.StatusUnauthorized && r.Header.Get("Authorization") == "" {
		w.Header().Set("WWW-Authenticate", `Bearer realm="mcp-code-runner console"`)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	data := map[string]any{"Status": status, "Message": msg}
	if err := pages.ExecuteTemplate(w, "login.html", data); err != nil {
		c.d.Log.Warn("console: rendering the login page", "err", err)
	}
}

// login takes an operator's token from the form and gives a console
// session's cookie for it.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !c.tokens.Required() {
		http.Redirect(w, r, Path, http.StatusSeeOther)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	token := strings.TrimSpace(r.PostFormValue("token"))
	if token == "" {
		c.deny(w, r, http.StatusUnauthorized, "enter an operator's token")
		return
	}
	p, err := c.tokens.Verify(r.Context(), token, r)
	if err != nil {
		c.deny(w, r, http.StatusUnauthorized, "that token is not one of this server's")
		return
	}
	if !p.Operator {
		c.deny(w, r, http.StatusForbidden, "")
		return
	}
	id, _ := c.logins.add(p)
	// Secure whenever the browser came over HTTPS; a loopback listener
	// speaks plain HTTP, where a Secure cookie would not come back.
	http.SetCookie(w, &http.Cookie{ //nolint:gosec // Secure is set for HTTPS requests; see above
		Name: cookieName, Value: id, Path: Path, MaxAge: int(loginTTL.Seconds()),
		HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil || r.Header.Get("X-Forwarded-Proto") == "https",
	})
	c.d.Log.Info("console: operator signed in", "principal", p.Name)
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

func (c *Console) logout(w http.ResponseWriter, r *http.Request) {
	if ck, err := r.Cookie(cookieName); err == nil {
		c.logins.remove(ck.Value)
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "", Path: Path, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode, Secure: r.TLS != nil}) //nolint:gosec // it only clears the cookie
	http.Redirect(w, r, Path, http.StatusSeeOther)
}

// action checks an action's CSRF token (a form's csrf field; requests
// with a bearer token need none), runs it as the operator and returns to
// the console with what it did.
func (c *Console) action(do func(ctx context.Context, id string) (string, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		v := visitorOf(r.Context())
		r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
		if v.csrf != "" && subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(v.csrf)) != 1 {
			http.Error(w, "Forbidden: the form's CSRF token is missing or stale; reload the console and try again", http.StatusForbidden)
			return
		}
		id := r.PathValue("id")
		done, err := do(asOperator(r.Context()), id)
		msg := done
		if err != nil {
			msg = err.Error()
		}
		c.d.Log.Info("console: operator action", "principal", v.p.Name, "path", r.URL.Path, "err", err)
		http.Redirect(w, r, Path+"?done="+urlQueryEscape(msg), http.StatusSeeOther)
	}
}
