// Package principal names who made a request: the identity that owns the
// sessions, executions, outputs and artifacts it creates, and that quotas,
// metrics and the audit log are kept by. A principal never holds a
// credential: a bearer token is known here only by its configured name.
package principal

import "context"

// Principal is the identity behind one request.
type Principal struct {
	// Name identifies the principal in ownership checks, logs, metrics and
	// the audit log: a token's configured name, a short hash of a bare
	// token, or an OAuth subject. Never a token.
	Name string
	// ClientID is the OAuth client the token was issued to, if any.
	ClientID string
	// Operator may list and cancel every principal's work.
	Operator bool
}

// LocalName is the name of the one principal of stdio and of an
// unauthenticated loopback listener.
const LocalName = "local"

// Local is the principal of stdio and of an unauthenticated loopback listener.
func Local() Principal { return Principal{Name: LocalName} }

// Owns reports whether p may manage something owned by owner: list it,
// cancel it, close it. That is its own work, or anything for an operator.
func (p Principal) Owns(owner string) bool { return p.Operator || p.Name == owner }

// Uses reports whether p may use something owned by owner: run code in it,
// read or write its files, read its output. Only the owner may, operators
// included: managing the server does not need anyone's data.
func (p Principal) Uses(owner string) bool { return p.Name == owner }

type contextKey struct{}

// WithContext returns ctx carrying p.
func WithContext(ctx context.Context, p Principal) context.Context {
	return context.WithValue(ctx, contextKey{}, p)
}

// FromContext returns the principal ctx carries, or the local principal
// when it carries none (stdio, unauthenticated loopback HTTP).
func FromContext(ctx context.Context) Principal {
	if p, ok := ctx.Value(contextKey{}).(Principal); ok {
		return p
	}
	return Local()
}
