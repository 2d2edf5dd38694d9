//go:build !fast

package docker_test

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestAnImageOfAnotherArchitectureIsNamedAsSuch loads into the daemon an
// image whose configuration says another architecture than the daemon's
// (an empty layer, as `docker save` would write it) and checks that the
// image check names both platforms and says to rebuild it, instead of
// letting every sandbox of its pool fail at its first instruction.
func TestAnImageOfAnotherArchitectureIsNamedAsSuch(t *testing.T) {
	b := testutil.Backend(t)
	ctx := context.Background()
	other := "arm64"
	if info, err := b.Client().Info(ctx, client.InfoOptions{}); err != nil {
		t.Fatal(err)
	} else if info.Info.Architecture == "aarch64" || info.Info.Architecture == "arm64" {
		other = "amd64"
	}
	tag := "mcr-test/other-arch:" + strconv.Itoa(os.Getpid())
	res, err := b.Client().ImageLoad(ctx, bytes.NewReader(savedImage(t, tag, other)), client.ImageLoadWithQuiet(true))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, res)
	_ = res.Close()
	t.Cleanup(func() {
		_, _ = b.Client().ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true})
	})
	err = b.CheckImage(ctx, tag)
	if !errors.Is(err, docker.ErrImagePlatform) || !errors.Is(err, sandbox.ErrImageMissing) {
		t.Fatalf("want the image reported as built for another platform, got %v", err)
	}
	if !strings.Contains(err.Error(), "linux/"+other) || !strings.Contains(err.Error(), "rebuild it") {
		t.Errorf("the error does not name the image's platform and the fix: %v", err)
	}
}

// TestTheBackendNamesItsSandboxesArchitectureAsGoNamesIt: the daemon
// reports "x86_64" or "aarch64"; list_languages compares Go's names.
func TestTheBackendNamesItsSandboxesArchitectureAsGoNamesIt(t *testing.T) {
	b := testutil.Backend(t)
	info, err := b.Client().Info(context.Background(), client.InfoOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := b.Architecture(context.Background()), dockerengine.GoArch(info.Info.Architecture); got != want || (got != "amd64" && got != "arm64") {
		t.Errorf("Architecture %q on a daemon that reports %q; want %q", got, info.Info.Architecture, want)
	}
}

// savedImage is a `docker save` archive of one image tagged tag: an empty
// layer and a configuration for linux/arch.
func savedImage(t *testing.T, tag, arch string) []byte {
	t.Helper()
	var layer bytes.Buffer
	if err := tar.NewWriter(&layer).Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(layer.Bytes())
	config, err := json.Marshal(map[string]any{
		"architecture": arch, "os": "linux", "config": map[string]any{"Cmd": []string{"/true"}},
		"rootfs": map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + hex.EncodeToString(sum[:])}},
	})
	if err != nil {
		t.Fatal(err)
	}
	manifest, err := json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{tag}, "Layers": []string{"layer.tar"}}})
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w := tar.NewWriter(&out)
	for _, f := range []struct {
		name string
		data []byte
	}{{"layer.tar", layer.Bytes()}, {"config.json", config}, {"manifest.json", manifest}} {
		if err := w.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}
