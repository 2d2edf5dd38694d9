package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestDefaultIsValid(t *testing.T) {
	if err := Default().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestLoadLayers(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.json")
	if err := os.WriteFile(path, []byte(`{"limits":{"memory_mb":512,"timeout_seconds":5},"http":{"allowed_origins":["https://a.example"]}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"MCR_LIMITS_TIMEOUT_SECONDS": "7", "MCR_LIMITS_CPUS": "0.5", "MCR_HTTP_ALLOWED_HOSTS": "h1, h2"}
	c, err := Load(path, func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	if c.Limits.MemoryMB != 512 || c.Limits.TimeoutSeconds != 7 || c.Limits.CPUs != 0.5 {
		t.Errorf("limits %+v", c.Limits)
	}
	if len(c.HTTP.AllowedHosts) != 2 || c.HTTP.AllowedHosts[1] != "h2" || c.HTTP.AllowedOrigins[0] != "https://a.example" {
		t.Errorf("http %+v", c.HTTP)
	}
}

func TestLoadRejects(t *testing.T) {
	cases := []struct {
		name, file string
		env        map[string]string
		want       string
	}{
		{"unknown field", `{"limits":{"memroy_mb":1}}`, nil, "unknown field"},
		{"default above max", `{"limits":{"timeout_seconds":100}}`, nil, "above limits.max_timeout_seconds"},
		{"zero limit", `{"limits":{"pids_limit":0}}`, nil, "limits.pids_limit must be positive"},
		{"bad env", `{}`, map[string]string{"MCR_LIMITS_MEMORY_MB": "lots"}, "MCR_LIMITS_MEMORY_MB"},
		{"unknown backend", `{"backend":"nomad"}`, nil, `backend "nomad": want "auto", "docker", "kubernetes" or "crun"`},
		{"kubernetes without a namespace", `{"backend":"kubernetes","kubernetes":{"namespace":""}}`, nil, "kubernetes.namespace is required"},
		{"bad node selector", `{"backend":"kubernetes","kubernetes":{"node_selector":["pool"]}}`, nil, "want KEY=VALUE"},
		{"bad toleration effect", `{"backend":"kubernetes","kubernetes":{"tolerations":["a=b:Sometimes"]}}`, nil, "want KEY[=VALUE]:EFFECT"},
		{"bad pull policy", `{"backend":"kubernetes","kubernetes":{"image_pull_policy":"Maybe"}}`, nil, "want Always, IfNotPresent or Never"},
		{"unknown store", `{"store":{"backend":"redis"}}`, nil, `store.backend "redis": want "embedded" or "etcd"`},
		{"etcd without endpoints", `{"store":{"backend":"etcd"}}`, nil, "store.etcd.endpoints is required"},
		{"etcd endpoint without a scheme", `{"store":{"backend":"etcd","etcd":{"endpoints":["etcd:2379"]}}}`, nil, `entry "etcd:2379": want an http:// or https:// URL`},
		{"etcd certificate without its key", `{"store":{"backend":"etcd","etcd":{"endpoints":["https://e:2379"],"cert_file":"c.pem"}}}`, nil, "cert_file and store.etcd.key_file go together"},
		{"etcd user without a password source", `{"store":{"backend":"etcd","etcd":{"endpoints":["https://e:2379"],"username":"mcr"}}}`, nil, "never written in the configuration itself"},
		{"etcd password in the configuration", `{"store":{"backend":"etcd","etcd":{"endpoints":["https://e:2379"],"username":"mcr","password":"hunter2"}}}`, nil, `unknown field "password"`},
		{"etcd dial timeout zero", `{"store":{"backend":"etcd","etcd":{"endpoints":["https://e:2379"],"dial_timeout_seconds":0}}}`, nil, "dial_timeout_seconds must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.json")
			_ = os.WriteFile(path, []byte(c.file), 0o644)
			_, err := Load(path, func(k string) string { return c.env[k] })
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}

func TestEnvNamesCoverEveryLimit(t *testing.T) {
	names := EnvNames()
	for _, want := range []string{"MCR_LIMITS_MAX_TIMEOUT_SECONDS", "MCR_MAX_CONCURRENT_RUNS", "MCR_HTTP_MAX_BODY_BYTES", "MCR_DOCKER_HOST", "MCR_ROOT_IMAGE"} {
		if _, ok := names[want]; !ok {
			t.Errorf("%s is not read", want)
		}
	}
}

func TestKubernetesPlacementSettingsParse(t *testing.T) {
	env := map[string]string{
		"MCR_BACKEND":                  "kubernetes",
		"MCR_KUBERNETES_NODE_SELECTOR": "pool=sandboxes, zone=a",
		"MCR_KUBERNETES_TOLERATIONS":   "sandbox=true:NoSchedule,dedicated:NoExecute",
	}
	c, err := Load("", func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	sel, _ := c.Kubernetes.NodeSelectorMap()
	if c.Backend != BackendKubernetes || sel["pool"] != "sandboxes" || sel["zone"] != "a" {
		t.Errorf("backend %q node selector %v", c.Backend, sel)
	}
	tol, _ := c.Kubernetes.ParsedTolerations()
	want := []Toleration{{Key: "sandbox", Value: "true", Effect: "NoSchedule"}, {Key: "dedicated", Effect: "NoExecute", Exists: true}}
	if len(tol) != 2 || tol[0] != want[0] || tol[1] != want[1] {
		t.Errorf("tolerations %+v, want %+v", tol, want)
	}
}
