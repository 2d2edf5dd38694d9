//go:build !fast

package images_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestDaemonThatCannotReachTheRegistrySaysWhichAndWhatToDo has the real
// daemon pull from a loopback registry address where nothing listens (a
// port bound and closed here): the failure names the daemon, the registry
// and the cause, and gives the fixes.
func TestDaemonThatCannotReachTheRegistrySaysWhichAndWhatToDo(t *testing.T) {
	cli := testutil.RequireDocker(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	registry := ln.Addr().String()
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	ref := registry + "/library/debian:trixie-slim"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	err = images.Pull(ctx, cli, ref, ocispec.Platform{})
	var pe *images.PullError
	if !errors.As(err, &pe) {
		t.Fatalf("got %v, want a PullError", err)
	}
	if pe.Cause != images.PullRefused || pe.Registry != registry || pe.Daemon != cli.DaemonHost() {
		t.Errorf("cause %v, registry %q, daemon %q; want refused, %q, %q (%v)", pe.Cause, pe.Registry, pe.Daemon, registry, cli.DaemonHost(), err)
	}
	msg := err.Error()
	t.Log(msg)
	for _, want := range []string{
		"the Docker daemon at " + cli.DaemonHost(),
		"could not pull " + ref + " from the registry " + registry,
		"could not reach the registry: the connection was refused",
		"give the daemon access to " + registry,
		"root_image (--root-image, MCR_ROOT_IMAGE)",
		"`mcp-code-runner images build` as root on a Debian or Ubuntu machine with debootstrap installed",
		"docker save " + images.RootTag,
		"docker load",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %q:\n%s", want, msg)
		}
	}
	if _, err := cli.ImageInspect(ctx, ref); err == nil {
		t.Errorf("the failed pull left an image %s", ref)
	}
}
