package config

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// Token is a bearer token and the name of the principal it stands for.
// Only Name may appear in logs, metrics and errors.
type Token struct {
	Name     string
	Value    string
	Operator bool
}

// tokenName is what a token's name may be: it shows in logs, metrics and
// listings.
var tokenName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.@-]{0,63}$`)

// BareTokenName names a token given without a name: "token-" and the first
// 8 hex digits of its SHA-256, stable across restarts and not the token.
func BareTokenName(value string) string {
	sum := sha256.Sum256([]byte(value))
	return "token-" + hex.EncodeToString(sum[:4])
}

// ParseToken reads one token entry: "NAME=TOKEN", or a bare TOKEN. A bare
// token that itself contains "=" must be given with a name.
func ParseToken(entry string) (Token, error) {
	name, value, named := strings.Cut(entry, "=")
	if !named {
		if entry == "" {
			return Token{}, errors.New("an empty token entry: give NAME=TOKEN")
		}
		return Token{Name: BareTokenName(entry), Value: entry}, nil
	}
	switch {
	case name == "":
		return Token{}, errors.New(`a token entry with an empty name ("=..."): give it a name, NAME=TOKEN, or drop the "="`)
	case strings.Trim(value, "=") == "":
		return Token{}, fmt.Errorf("the token entry named %q has no token after %q (a bare token ending in \"=\", like base64 padding, needs a name: NAME=TOKEN)", name, name+"=")
	case !tokenName.MatchString(name):
		return Token{}, fmt.Errorf("token name %q: use 1 to 64 letters, digits and . _ @ - (starting with a letter or digit)", name)
	}
	return Token{Name: name, Value: value}, nil
}

// Tokens parses AuthTokens and marks the Operators among them. Names and
// tokens must be unique, and every operator must name a token.
func (h HTTP) Tokens() ([]Token, error) { return h.tokens(true) }

// tokens parses AuthTokens; checkOperators also checks that every operator
// names one of them (not at load time: serve adds --auth-token later).
func (h HTTP) tokens(checkOperators bool) ([]Token, error) {
	var out []Token
	var errs []error
	names := map[string]bool{}
	values := map[string]string{}
	for i, e := range h.AuthTokens {
		t, err := ParseToken(e)
		if err != nil {
			errs = append(errs, fmt.Errorf("http.auth_tokens entry %d: %w", i+1, err))
			continue
		}
		if names[t.Name] {
			errs = append(errs, fmt.Errorf("http.auth_tokens: the name %q is given twice; every token needs its own name", t.Name))
			continue
		}
		if other, ok := values[t.Value]; ok {
			errs = append(errs, fmt.Errorf("http.auth_tokens: tokens %q and %q are the same token; give each client its own", other, t.Name))
			continue
		}
		names[t.Name], values[t.Value] = true, t.Name
		t.Operator = slices.Contains(h.Operators, t.Name)
		out = append(out, t)
	}
	for _, op := range h.Operators {
		if checkOperators && !names[op] && len(errs) == 0 {
			errs = append(errs, fmt.Errorf("http.operators names %q, which is no token's name (the names are: %s)", op, strings.Join(slices.Sorted(maps.Keys(names)), ", ")))
		}
	}
	return out, errors.Join(errs...)
}
