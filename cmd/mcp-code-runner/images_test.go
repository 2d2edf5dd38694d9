package main

import (
	"bytes"
	"strings"
	"testing"
)

// The root image setting comes from the flag, else the environment (or the
// config file), and a reference the daemon could not pull as meant is
// refused before anything touches the daemon: the socket here does not
// exist, so reaching it would fail otherwise.
func TestRootImageSettingIsCheckedBeforeTheDaemon(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"images build, from the flag", []string{"images", "build", "--root-image", "mirror.example/library/debian", "base"}, "", "names no tag"},
		{"images build, from the environment", []string{"images", "build", "base"}, "mirror.example/Debian:trixie-slim", "want an image reference such as"},
		{"images build, the flag over the environment", []string{"images", "build", "--root-image", "mirror.example/debian", "base"}, "debian:trixie-slim", "names no tag"},
		{"setup, from the environment", []string{"setup", "--languages", "bash"}, "mirror.example/library/debian", "names no tag"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("MCR_ROOT_IMAGE", c.env)
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append(c.args, "--docker-host", "unix:///nonexistent/docker.sock"))
			err := root.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "MCR_ROOT_IMAGE") {
				t.Fatalf("got %v, want an error naming the setting and containing %q", err, c.want)
			}
			if strings.Contains(out.String(), "[1/4]") {
				t.Errorf("the command reached the engine:\n%s", out.String())
			}
		})
	}
}

// A platform the images do not build for is refused before anything touches
// the daemon (the socket here does not exist), from the flag or from the
// environment, naming the platforms they do build for.
func TestPlatformIsCheckedBeforeTheDaemon(t *testing.T) {
	for _, c := range []struct {
		name string
		args []string
		env  string
		want string
	}{
		{"from the flag", []string{"images", "build", "--platform", "linux/riscv64", "base"}, "", "not linux/riscv64"},
		{"from the environment", []string{"images", "build", "base"}, "windows/amd64", "not windows/amd64"},
		{"the flag over the environment", []string{"images", "build", "--platform", "arm64", "base"}, "linux/arm64", "want OS/ARCHITECTURE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("MCR_BUILD_PLATFORM", c.env)
			root := newRootCmd()
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append(c.args, "--docker-host", "unix:///nonexistent/docker.sock"))
			err := root.ExecuteContext(t.Context())
			if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "--platform") || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
				t.Fatalf("got %v, want a --platform error containing %q that names linux/amd64, linux/arm64", err, c.want)
			}
		})
	}
}
