package crun

import (
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// Refusal says why the crun backend cannot serve with cfg on this host, as
// far as is known without asking the Docker daemon (Backend.Check asks it
// the rest), or "" if it may: the backend "auto" then chooses it. goos,
// euid and envHost (DOCKER_HOST, which docker_host overrides) are this
// process's.
func Refusal(cfg config.Config, goos string, euid int, envHost string) string {
	host := cfg.DockerHost
	if host == "" {
		host = envHost
	}
	switch {
	case goos != "linux":
		return "not Linux"
	case euid != 0:
		return "not root"
	case strings.Contains(cfg.Runtime, "runsc"):
		return "runtime " + cfg.Runtime + " (gVisor) runs on the docker backend"
	case cfg.Runtime != "" && cfg.Runtime != "auto" && cfg.Runtime != "crun":
		return "runtime " + cfg.Runtime + " is set, which the docker backend runs sandboxes under"
	case host != "" && !strings.HasPrefix(host, "unix://"):
		return "the Docker daemon at " + host + " is not on this host"
	case cfg.SharedDir != "":
		return "shared_dir is set: this server runs apart from the Docker daemon"
	}
	return ""
}
