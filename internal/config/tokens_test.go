package config

import (
	"strings"
	"testing"
)

func TestTokensAreNamedOrHashed(t *testing.T) {
	h := HTTP{AuthTokens: []string{"alice=tok-a", "tok-b", "ops=tok-c"}, Operators: []string{"ops"}}
	got, err := h.Tokens()
	if err != nil {
		t.Fatal(err)
	}
	want := []Token{
		{Name: "alice", Value: "tok-a"},
		{Name: BareTokenName("tok-b"), Value: "tok-b"},
		{Name: "ops", Value: "tok-c", Operator: true},
	}
	if len(got) != len(want) {
		t.Fatalf("got %+v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	if n := BareTokenName("tok-b"); !strings.HasPrefix(n, "token-") || len(n) != len("token-")+8 || strings.Contains(n, "tok-b") {
		t.Errorf("bare token name %q: want token- and 8 hex digits, without the token", n)
	}
}

func TestTokensRejectAmbiguousEntries(t *testing.T) {
	cases := []struct {
		name      string
		http      HTTP
		want      string
		notLeaked string
	}{
		{"empty name", HTTP{AuthTokens: []string{"=s3cret"}}, "empty name", "s3cret"},
		{"duplicate names", HTTP{AuthTokens: []string{"ci=s3cret-1", "ci=s3cret-2"}}, `"ci" is given twice`, "s3cret"},
		{"same token twice", HTTP{AuthTokens: []string{"a=s3cret", "b=s3cret"}}, "are the same token", "s3cret"},
		{"no token after the name", HTTP{AuthTokens: []string{"ci="}}, "has no token", ""},
		{"base64 padding without a name", HTTP{AuthTokens: []string{"c2VjcmV0=="}}, "needs a name", ""},
		{"name with a space", HTTP{AuthTokens: []string{"my ci=s3cret"}}, "token name", "s3cret"},
		{"operator that is no token", HTTP{AuthTokens: []string{"ci=s3cret"}, Operators: []string{"root"}}, `"root", which is no token's name`, "s3cret"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := c.http.Tokens()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %v, want an error containing %q", err, c.want)
			}
			if c.notLeaked != "" && strings.Contains(err.Error(), c.notLeaked) {
				t.Errorf("the error shows the token: %v", err)
			}
		})
	}
}

func TestLoadRejectsBadTokensAndQuotas(t *testing.T) {
	cases := []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{"MCR_HTTP_AUTH_TOKENS": "=tok"}, "empty name"},
		{map[string]string{"MCR_HTTP_AUTH_TOKENS": "a=tok1,a=tok2"}, "given twice"},
		{map[string]string{"MCR_QUOTAS_SESSIONS": "-1"}, "quotas settings must be 0"},
	}
	for _, c := range cases {
		_, err := Load("", func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: got %v, want an error containing %q", c.env, err, c.want)
		}
	}
}
