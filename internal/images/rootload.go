package images

import (
	"archive/tar"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// loadRoot makes the root file system at dir the image tag for platform. It loads a `docker save` archive whose configuration names the
// platform, rather than importing the file system: Docker 20.10 labels an
// imported image with its own architecture whatever platform it is asked
// for, and an arm64 image labelled amd64 cannot be run or used as arm64.
func loadRoot(ctx context.Context, cli *client.Client, dir, tag string, platform ocispec.Platform, comment string, log io.Writer) error {
	// Beside dir, on disk: the archive is as large as the file system.
	layer, err := os.Create(dir + ".tar")
	if err != nil {
		return fmt.Errorf("creating the root file system's archive: %w", err)
	}
	defer os.Remove(layer.Name())
	defer layer.Close()
	sum := sha256.New()
	tarCmd := exec.CommandContext(ctx, "tar", "-C", dir, "--numeric-owner", "-c", ".")
	tarCmd.Stdout, tarCmd.Stderr = io.MultiWriter(layer, sum), log
	if err := tarCmd.Run(); err != nil {
		return fmt.Errorf("archiving the root file system: %w", err)
	}
	size, err := layer.Seek(0, io.SeekCurrent)
	if err != nil {
		return fmt.Errorf("archiving the root file system: %w", err)
	}
	config, manifest, err := rootArchiveMetadata(tag, platform, "sha256:"+hex.EncodeToString(sum.Sum(nil)), comment, time.Now().UTC())
	if err != nil {
		return err
	}
	if _, err := layer.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading the root file system's archive: %w", err)
	}

	fmt.Fprintf(log, "loading the root file system as %s for %s\n", tag, platformString(platform))
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeRootArchive(pw, layer, size, config, manifest))
	}()
	res, err := cli.ImageLoad(ctx, pr, client.ImageLoadWithQuiet(true))
	if err == nil {
		_, err = readStream(res, io.Discard)
		res.Close()
	}
	pr.CloseWithError(io.ErrClosedPipe) // ends the writer if the daemon stopped reading
	if err != nil {
		return fmt.Errorf("loading the root file system into Docker: %w", err)
	}
	return nil
}

// rootArchiveMetadata returns the image configuration and the manifest of
// a `docker save` archive of tag: one layer (diffID) for platform, with
// PATH and the command of Debian's official images.
func rootArchiveMetadata(tag string, platform ocispec.Platform, diffID, comment string, created time.Time) (config, manifest []byte, err error) {
	config, err = json.Marshal(map[string]any{
		"architecture": platform.Architecture,
		"os":           platform.OS,
		"created":      created.Format(time.RFC3339Nano),
		"comment":      comment,
		"config":       map[string]any{"Env": []string{"PATH=" + rootPath}, "Cmd": []string{"bash"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		"history":      []map[string]any{{"created": created.Format(time.RFC3339Nano), "created_by": comment}},
	})
	if err != nil {
		return nil, nil, err
	}
	manifest, err = json.Marshal([]map[string]any{{"Config": "config.json", "RepoTags": []string{tag}, "Layers": []string{"layer.tar"}}})
	return config, manifest, err
}

// writeRootArchive writes the `docker save` archive of the layer (size
// bytes from r) with its configuration and manifest to w.
func writeRootArchive(w io.Writer, r io.Reader, size int64, config, manifest []byte) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "layer.tar", Mode: 0o644, Size: size}); err != nil {
		return err
	}
	if _, err := io.CopyN(tw, r, size); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{"config.json", config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			return err
		}
		if _, err := tw.Write(f.data); err != nil {
			return err
		}
	}
	return tw.Close()
}
