package docker

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func TestAnImageOfAnotherPlatformIsReportedUnusable(t *testing.T) {
	for _, c := range []struct {
		name                                     string
		imageOS, imageArch, daemonOS, daemonArch string
		unusable                                 bool
	}{
		{"the daemon's own platform", "linux", "amd64", "linux", "x86_64", false},
		{"arm64 named two ways", "linux", "arm64", "linux", "aarch64", false},
		{"an arm64 image on an amd64 daemon", "linux", "arm64", "linux", "x86_64", true},
		{"an amd64 image on Apple Silicon's Docker Desktop", "linux", "amd64", "linux", "aarch64", true},
		{"a Windows image on a Linux daemon", "windows", "amd64", "linux", "x86_64", true},
		{"an image that names no architecture", "linux", "", "linux", "x86_64", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := imagePlatformMismatch("mcp-code-runner/python:2", c.imageOS, c.imageArch, c.daemonOS, c.daemonArch)
			if (err != nil) != c.unusable {
				t.Fatalf("got %v, want unusable=%v", err, c.unusable)
			}
			if err != nil && (!errors.Is(err, sandbox.ErrImageMissing) || !errors.Is(err, ErrImagePlatform) || !strings.Contains(err.Error(), "rebuild it")) {
				t.Errorf("the error does not say the image must be rebuilt: %v", err)
			}
		})
	}
}
