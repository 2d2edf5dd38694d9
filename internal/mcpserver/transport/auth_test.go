package transport

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

func TestVerifierNamesThePrincipal(t *testing.T) {
	t.Parallel()
	intro := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		exp := time.Now().Add(time.Hour).Unix()
		switch r.Form.Get("token") {
		case "admin-oauth":
			fmt.Fprintf(w, `{"active":true,"sub":"dana","client_id":"console","scope":"run mcr:operator","exp":%d}`, exp)
		case "user-oauth":
			fmt.Fprintf(w, `{"active":true,"sub":"erin","client_id":"cli","scope":"run","exp":%d}`, exp)
		default:
			fmt.Fprint(w, `{"active":false}`)
		}
	}))
	t.Cleanup(intro.Close)
	verify := verifier(HTTPOptions{
		Tokens:       []config.Token{{Name: "ci", Value: "ci-s3cret"}, {Name: "ops", Value: "ops-s3cret", Operator: true}},
		BearerTokens: []string{"bare-s3cret"},
		OAuth:        OAuthOptions{Issuer: "https://issuer.example", IntrospectionURL: intro.URL, OperatorScope: "mcr:operator"},
	})
	cases := []struct {
		token string
		want  principal.Principal
	}{
		{"ci-s3cret", principal.Principal{Name: "ci"}},
		{"ops-s3cret", principal.Principal{Name: "ops", Operator: true}},
		{"bare-s3cret", principal.Principal{Name: config.BareTokenName("bare-s3cret")}},
		{"admin-oauth", principal.Principal{Name: "dana", ClientID: "console", Operator: true}},
		{"user-oauth", principal.Principal{Name: "erin", ClientID: "cli"}},
	}
	for _, c := range cases {
		ti, err := verify(context.Background(), c.token, nil)
		if err != nil {
			t.Errorf("%s: %v", c.token, err)
			continue
		}
		if got := principalOf(ti); got != c.want || ti.UserID != c.want.Name {
			t.Errorf("%s: principal %+v (user %q), want %+v", c.token, got, ti.UserID, c.want)
		}
	}
	if _, err := verify(context.Background(), "unknown", nil); err == nil {
		t.Error("an unknown token was accepted")
	}
}
