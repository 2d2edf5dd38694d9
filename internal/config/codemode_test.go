package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestCodeModeSettingsAreCheckedWithWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		servers map[string]CodeModeServer
		grants  []CodeModeGrant
		want    string // "" is valid
	}{
		{"a stdio and an HTTP server", map[string]CodeModeServer{"fs": {Command: "node", Args: []string{"x"}}, "gh": {URL: "https://h/mcp", Headers: map[string]string{"Authorization": "Bearer {secret:api}"}}}, nil, ""},
		{"a name that is no module's", map[string]CodeModeServer{"My-Fs": {Command: "x"}}, nil, "use lower-case letters"},
		{"both command and url", map[string]CodeModeServer{"fs": {Command: "x", URL: "http://h"}}, nil, "exactly one"},
		{"a url that is not HTTP", map[string]CodeModeServer{"fs": {URL: "ftp://h"}}, nil, "want an http:// or https:// URL"},
		{"headers on a stdio server", map[string]CodeModeServer{"fs": {Command: "x", Headers: map[string]string{"A": "b"}}}, nil, "headers are a url server's"},
		{"a secret that is not the operator's", map[string]CodeModeServer{"fs": {Command: "x", Env: map[string]string{"T": "{secret:nope}"}}}, nil, "{secret:nope} names no secret"},
		{"approval of tools without tools", map[string]CodeModeServer{"fs": {Command: "x", Approval: ApprovalTools}}, nil, "needs approval_tools"},
		{"a grant of an unknown server", map[string]CodeModeServer{"fs": {Command: "x"}}, []CodeModeGrant{{Principals: []string{"a"}, Servers: []string{"zz"}}}, `server "zz" is not one of code_mode.servers`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Default()
			c.Network.Secrets = []Secret{{Name: "api", Hosts: []string{"h"}, Header: "Authorization", ValueEnv: "API"}}
			c.CodeMode.Servers, c.CodeMode.Grants = tc.servers, tc.grants
			err := errors.Join(c.CodeMode.validate(c.Network.Secrets)...)
			if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
				t.Fatalf("got %v, want %q", err, tc.want)
			}
		})
	}
}

func TestCodeModeGrantsDefaultToEveryoneAndOtherwiseNameWho(t *testing.T) {
	c := CodeMode{Servers: map[string]CodeModeServer{"fs": {}, "gh": {}, "db": {}}}
	if got := c.Granted("anyone"); !slices.Equal(got, []string{"db", "fs", "gh"}) {
		t.Fatalf("no grants: %v", got)
	}
	c.Grants = []CodeModeGrant{{Principals: []string{"*"}, Servers: []string{"fs"}}, {Principals: []string{"alice"}, Servers: []string{"*"}}}
	if got := c.Granted("bob"); !slices.Equal(got, []string{"fs"}) || !c.Allows("alice", "db") || c.Allows("bob", "gh") || c.Allows("alice", "nope") {
		t.Fatalf("grants: bob %v", got)
	}
	v, err := Expand("Bearer {secret:api} {env:HOME}", func(string) (string, error) { return "s3", nil }, func(string) string { return "/h" })
	if err != nil || v != "Bearer s3 /h" {
		t.Fatalf("expand: %q, %v", v, err)
	}
	if _, err := Expand("{env:UNSET}", nil, func(string) string { return "" }); err == nil || !strings.Contains(err.Error(), "UNSET is empty or unset") {
		t.Fatalf("an unset variable: %v", err)
	}
}
