package docker

import (
	"archive/tar"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// daemonSees returns "" if the daemon sees path with content of SHA-256
// sum, else why not.
//
// The probe mounts path's directory, not path: Podman 4.3 cannot copy a
// file out of a container where a file is bind-mounted ("chdir: not a
// directory"), and the probe never starts, so nothing runs beside the
// directory's other files.
func (b *Backend) daemonSees(ctx context.Context, image, path, sum string) (string, error) {
	id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeBind, Source: filepath.Dir(path), Target: "/probe", ReadOnly: true})
	if err != nil {
		if cerrdefs.IsInvalidArgument(err) || strings.Contains(err.Error(), "does not exist") {
			return "the daemon does not see " + path, nil
		}
		return "", fmt.Errorf("asking the daemon whether it sees %s: %w", path, err)
	}
	defer b.removeProbe(id)
	got, err := b.readFromContainer(ctx, id, "/probe/"+filepath.Base(path))
	switch {
	case err != nil:
		return fmt.Sprintf("the daemon cannot read %s (%v)", path, err), nil
	case sha256Hex(got) != sum:
		return "the daemon sees another file at " + path, nil
	}
	return "", nil
}

// daemonSeesTempDir returns "" if the daemon sees this process's temporary
// directory, where agents' sockets go, else why not; it writes a marker of
// random content there and asks the daemon to read it.
func (b *Backend) daemonSeesTempDir(ctx context.Context, image string) (string, error) {
	dir, err := os.MkdirTemp("", socketsPrefix(b.owner))
	if err != nil {
		return "no directory for agent sockets: " + err.Error(), nil
	}
	defer os.RemoveAll(dir)
	marker := make([]byte, 32)
	_, _ = rand.Read(marker)
	path := filepath.Join(dir, "marker")
	if err := os.WriteFile(path, marker, 0o644); err != nil {
		return "no directory for agent sockets: " + err.Error(), nil
	}
	why, err := b.daemonSees(ctx, image, path, sha256Hex(marker))
	if why != "" {
		why = strings.Replace(why, path, os.TempDir(), 1)
	}
	return why, err
}

// probeContainer creates (and never starts) a container of image with m,
// labelled as this server's so that a sweep removes it if this process dies
// before it does.
func (b *Backend) probeContainer(ctx context.Context, image string, m mount.Mount) (string, error) {
	created, err := b.cli.ContainerCreate(context.WithoutCancel(ctx), client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Cmd: []string{AgentPath}, NetworkDisabled: true, Labels: map[string]string{
			LabelManaged: "true", LabelOwner: b.owner.ID, LabelOwnerHost: b.owner.Host, LabelOwnerPID: strconv.Itoa(b.owner.PID),
			LabelOwnerBoot: b.owner.Start, LabelPurpose: "agent-probe",
		}},
		HostConfig: &container.HostConfig{NetworkMode: "none", LogConfig: container.LogConfig{Type: "none"}, Mounts: []mount.Mount{m}},
	})
	if err != nil {
		return "", err
	}
	return created.ID, nil
}

func (b *Backend) removeProbe(id string) {
	_, _ = b.cli.ContainerRemove(context.Background(), id, client.ContainerRemoveOptions{Force: true})
}

// readFromContainer returns the content of the regular file at path in
// container id (which need not be running).
func (b *Backend) readFromContainer(ctx context.Context, id, path string) ([]byte, error) {
	res, err := b.cli.CopyFromContainer(ctx, id, client.CopyFromContainerOptions{SourcePath: path})
	if err != nil {
		return nil, err
	}
	defer res.Content.Close()
	tr := tar.NewReader(res.Content)
	h, err := tr.Next()
	if err != nil {
		return nil, err
	}
	if h.Typeflag != tar.TypeReg {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	return io.ReadAll(io.LimitReader(tr, 1<<30))
}

func sha256Hex(data []byte) string {
	s := sha256.Sum256(data)
	return hex.EncodeToString(s[:])
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
