//go:build linux

package docker

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/profiles/seccomp"
)

// seccompFileName is Docker's default seccomp profile, written for an
// engine that applies its own otherwise.
const seccompFileName = "seccomp-default.json"

// writeDockerSeccomp writes Docker's default seccomp profile (the one
// every Docker sandbox runs under) into dir for Podman, whose own default
// allows unshare and setns to a process without capabilities, and whose
// API takes a profile only as a file the engine can read. It returns the
// file's path.
func writeDockerSeccomp(dir string) (string, error) {
	data, err := json.Marshal(seccomp.DefaultProfile())
	if err != nil {
		return "", fmt.Errorf("encoding Docker's default seccomp profile: %w", err)
	}
	path := filepath.Join(dir, seccompFileName)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return "", fmt.Errorf("writing the seccomp profile for Podman: %w", err)
	}
	return path, nil
}
