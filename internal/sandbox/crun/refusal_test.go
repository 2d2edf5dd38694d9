package crun_test

import (
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
)

func TestAutoLeavesCrunOnlyWhereItCannotServe(t *testing.T) {
	tests := []struct {
		name    string
		goos    string
		euid    int
		cfg     func(*config.Config)
		envHost string
		want    string
	}{
		{name: "root on Linux beside the local daemon may use crun", goos: "linux", want: ""},
		{name: "a unix socket in DOCKER_HOST is local", goos: "linux", envHost: "unix:///run/docker.sock", want: ""},
		{name: "off Linux there is no crun", goos: "darwin", want: "not Linux"},
		{name: "a user other than root cannot mount or make cgroups", goos: "linux", euid: 1000, want: "not root"},
		{name: "gVisor runs on the docker backend", goos: "linux", cfg: func(c *config.Config) { c.Runtime = "runsc" },
			want: "runtime runsc (gVisor) runs on the docker backend"},
		{name: "another runtime set runs on the docker backend", goos: "linux", cfg: func(c *config.Config) { c.Runtime = "runc" },
			want: "runtime runc is set, which the docker backend runs sandboxes under"},
		{name: "runtime crun is what the crun backend is", goos: "linux", cfg: func(c *config.Config) { c.Runtime = "crun" }, want: ""},
		{name: "a daemon over TCP is not on this host", goos: "linux", envHost: "tcp://10.0.0.2:2376",
			want: "the Docker daemon at tcp://10.0.0.2:2376 is not on this host"},
		{name: "docker_host overrides DOCKER_HOST", goos: "linux", envHost: "unix:///run/docker.sock",
			cfg: func(c *config.Config) { c.DockerHost = "ssh://builder" }, want: "the Docker daemon at ssh://builder is not on this host"},
		{name: "a server in a container shares a directory with the daemon", goos: "linux",
			cfg: func(c *config.Config) { c.SharedDir = "/shared" }, want: "shared_dir is set: this server runs apart from the Docker daemon"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := config.Default()
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			if got := crun.Refusal(cfg, tt.goos, tt.euid, tt.envHost); got != tt.want {
				t.Errorf("Refusal = %q, want %q", got, tt.want)
			}
		})
	}
}
