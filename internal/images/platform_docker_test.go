//go:build !fast

package images

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
)

// TestALoadedRootFileSystemIsLabelledWithThePlatformItWasBootstrappedFor
// loads a tiny root file system into the real daemon as an amd64 and as an
// arm64 image (loading runs nothing, so no emulator is needed) and checks
// the architecture the daemon reports: Docker 20.10 labels an imported one
// with its own, whatever platform it is asked for.
func TestALoadedRootFileSystemIsLabelledWithThePlatformItWasBootstrappedFor(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cli := requireDocker(ctx, t)
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		t.Run(platform, func(t *testing.T) {
			p, err := ParsePlatform(platform)
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(t.TempDir(), "rootfs")
			if err := os.MkdirAll(filepath.Join(dir, "etc"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "etc", "debian_version"), []byte("13.0\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			tag := fmt.Sprintf("mcp-code-runner-test/root-%s:%d", p.Architecture, os.Getpid())
			t.Cleanup(func() {
				_, _ = cli.ImageRemove(context.WithoutCancel(ctx), tag, client.ImageRemoveOptions{Force: true, PruneChildren: true})
			})
			var log strings.Builder
			if err := loadRoot(ctx, cli, dir, tag, p, "a test's root file system", &log); err != nil {
				t.Fatalf("loadRoot: %v\n%s", err, log.String())
			}
			img, err := cli.ImageInspect(ctx, tag)
			if err != nil {
				t.Fatal(err)
			}
			if img.Os != "linux" || dockerengine.GoArch(img.Architecture) != p.Architecture {
				t.Errorf("the daemon holds %s as %s/%s, want %s", tag, img.Os, img.Architecture, platform)
			}
			if img.Config == nil || len(img.Config.Env) != 1 || img.Config.Env[0] != "PATH="+rootPath {
				t.Errorf("the image's environment is %v, want PATH=%s", img.Config, rootPath)
			}
			if _, err := os.Stat(dir + ".tar"); !os.IsNotExist(err) {
				t.Errorf("the archive beside the file system is left behind: %v", err)
			}
			// A build for the other architecture says why this root does not
			// serve it, rather than calling it missing.
			other := ocispec.Platform{OS: "linux", Architecture: map[string]string{"amd64": "arm64", "arm64": "amd64"}[p.Architecture]}
			want := fmt.Sprintf("is for %s, not linux/%s", platform, other.Architecture)
			if got := rootState(ctx, cli, tag, other); !strings.Contains(got, want) {
				t.Errorf("the root for %s, asked for linux/%s: %q, want %q", platform, other.Architecture, got, want)
			}
		})
	}
}
