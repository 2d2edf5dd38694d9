package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func goodSecret() Secret {
	return Secret{Name: "github", Hosts: []string{"api.github.com"}, Header: "Authorization", Format: "Bearer {value}", ValueEnv: "GITHUB_TOKEN"}
}

// TestASecretIsValidatedWithoutItsValue: a configured secret needs a name,
// hosts, a header that can carry it and one source of its value (never the
// value itself); each fault is named.
func TestASecretIsValidatedWithoutItsValue(t *testing.T) {
	cases := []struct {
		name   string
		change func(*Secret)
		want   string
	}{
		{"a good one", func(*Secret) {}, ""},
		{"a name with capitals", func(s *Secret) { s.Name = "GitHub" }, "use lower-case letters"},
		{"no hosts", func(s *Secret) { s.Hosts = nil }, "hosts is empty"},
		{"a host with a scheme", func(s *Secret) { s.Hosts = []string{"https://api.github.com"} }, "without a scheme, port or path"},
		{"any host", func(s *Secret) { s.Hosts = []string{"*"} }, `host "*"`},
		{"a header that is not a name", func(s *Secret) { s.Header = "Auth: x" }, "want a header name"},
		{"the Host header", func(s *Secret) { s.Header = "host" }, "header Host routes or frames the request"},
		{"a format without the value", func(s *Secret) { s.Format = "Bearer" }, "has no {value}"},
		{"no source of the value", func(s *Secret) { s.ValueEnv = "" }, "exactly one"},
		{"two sources of the value", func(s *Secret) { s.ValueFile = "/run/secrets/github" }, "exactly one"},
		{"named principals", func(s *Secret) { s.Principals = []string{"alice"} }, ""},
		{"an empty principal", func(s *Secret) { s.Principals = []string{"alice", " "} }, "principals holds an empty name"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := Default()
			s := goodSecret()
			c.change(&s)
			cfg.Network.Secrets = []Secret{s}
			err := cfg.Validate()
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one saying %q", err, c.want)
			}
		})
	}
	cfg := Default()
	cfg.Network.Secrets = []Secret{goodSecret(), goodSecret()}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Fatalf("a name given twice: %v", err)
	}
}

// TestASecretsValueComesFromTheEnvironmentOrAFile: the value is read from
// the server's environment or a file (without its trailing newline); an
// empty or missing source, or a value a header cannot carry, is an error
// that names the secret and never shows a value.
func TestASecretsValueComesFromTheEnvironmentOrAFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := map[string]string{"GITHUB_TOKEN": "tok-from-env", "BROKEN": "a\nb"}
	getenv := func(k string) string { return env[k] }
	cases := []struct {
		name      string
		env, file string
		want      string
		wantErr   string
	}{
		{"from the environment", "GITHUB_TOKEN", "", "tok-from-env", ""},
		{"from a file", "", write("tok", "tok-from-file\n"), "tok-from-file", ""},
		{"an unset variable", "NOT_SET", "", "", "NOT_SET is empty or unset"},
		{"a missing file", "", filepath.Join(dir, "none"), "", "reading value_file"},
		{"an empty file", "", write("empty", "\n"), "", "is empty"},
		{"a value with a line break", "BROKEN", "", "", "line break"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := goodSecret()
			s.ValueEnv, s.ValueFile = c.env, c.file
			v, err := s.Value(getenv)
			if c.wantErr == "" {
				if err != nil || v != c.want {
					t.Fatalf("got %q, %v; want %q", v, err, c.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || !strings.Contains(err.Error(), `"github"`) || strings.Contains(err.Error(), "a\nb") {
				t.Fatalf("error %v, want one naming the secret and saying %q", err, c.wantErr)
			}
		})
	}
}

// TestASecretIsForThePrincipalsItNames: a secret with principals is
// theirs alone; one without is every client's.
func TestASecretIsForThePrincipalsItNames(t *testing.T) {
	s := goodSecret()
	if !s.Allows("anyone") {
		t.Error("a secret without principals refuses a client")
	}
	s.Principals = []string{"alice"}
	if !s.Allows("alice") || s.Allows("bob") {
		t.Errorf("a secret for alice: alice %v, bob %v", s.Allows("alice"), s.Allows("bob"))
	}
}

// TestSecretsAreNotSetFromTheEnvironment: the list of secrets has no
// environment variable (its records are the file's), so no MCR_ variable
// can inject one.
func TestSecretsAreNotSetFromTheEnvironment(t *testing.T) {
	if _, ok := EnvNames()["MCR_NETWORK_SECRETS"]; ok {
		t.Fatal("MCR_NETWORK_SECRETS sets network.secrets")
	}
}

// TestAConfigurationWithASecretsValueIsRefused: the value of a secret never
// sits in the configuration file; a file that gives one does not load.
func TestAConfigurationWithASecretsValueIsRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "config.json")
	data := `{"network": {"secrets": [{"name": "github", "hosts": ["api.github.com"], "header": "Authorization", "value": "ghp_plaintext"}]}}`
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path, func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), `unknown field "value"`) {
		t.Fatalf("loading a secret with its value: %v, want the unknown field value refused", err)
	}
}
