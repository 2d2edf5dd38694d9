package docker

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"strings"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// ensureAgentImage imports the agent image for the agent whose SHA-256 is
// sum unless the daemon has it, and returns its name.
func (b *Backend) ensureAgentImage(ctx context.Context, sum string) (string, error) {
	ref := agentImageRepo + ":" + sum[:16]
	if img, err := b.cli.ImageInspect(ctx, ref); err == nil && img.Config != nil && img.Config.Labels[LabelAgent] == sum {
		return ref, nil
	} else if err != nil && !cerrdefs.IsNotFound(err) {
		return "", b.classify(err, ref, "inspecting the agent image")
	}
	var layer bytes.Buffer
	if err := agentTar(&layer, b.opts.AgentPath, true); err != nil {
		return "", err
	}
	rc, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: &layer, SourceName: "-"}, ref,
		client.ImageImportOptions{Changes: []string{"LABEL " + LabelAgent + "=" + sum, `CMD ["` + AgentPath + `"]`}})
	if err != nil {
		return "", b.classify(err, ref, "importing the agent image")
	}
	defer rc.Close()
	if err := importError(rc); err != nil {
		return "", fmt.Errorf("importing the agent image %s: %w", ref, err)
	}
	return ref, nil
}

// agentTar writes a tar of the agent, owned by root and read-only for
// everyone: the volume filled from it keeps these modes. As a layer it
// holds the agent at AgentPath, with its directories; otherwise only the
// file, named as in AgentDir.
func agentTar(w io.Writer, agent string, layer bool) error {
	data, err := os.ReadFile(agent)
	if err != nil {
		return fmt.Errorf("reading the agent binary: %w", err)
	}
	tw := tar.NewWriter(w)
	name := path.Base(AgentPath)
	if layer {
		for _, d := range []string{"opt/", "opt/mcp-code-runner/"} {
			if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: 0o755}); err != nil {
				return err
			}
		}
		name = strings.TrimPrefix(AgentPath, "/")
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o555, Size: int64(len(data))}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return err
	}
	return tw.Close()
}

// importError returns the error an image import's JSON message stream
// reports, if any.
func importError(r io.Reader) error {
	dec := json.NewDecoder(r)
	for {
		var m struct {
			Error string `json:"error"`
		}
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		if m.Error != "" {
			return errors.New(m.Error)
		}
	}
}

// ensureAgentVolume makes the agent volume for the agent whose SHA-256 is
// sum, filled from image, unless it exists, and checks that it holds that
// agent and nothing else answers to its name.
func (b *Backend) ensureAgentVolume(ctx context.Context, image, sum string) (string, error) {
	name := agentVolumePrefix + sum[:16]
	v, err := b.cli.VolumeInspect(ctx, name, client.VolumeInspectOptions{})
	switch {
	case err == nil && v.Volume.Labels[LabelAgent] != sum:
		return "", fmt.Errorf("volume %s exists without the label %s=%s, so it was not made by mcp-code-runner for this agent: remove it (`docker volume rm %s`) and start again", name, LabelAgent, sum, name)
	case err == nil:
	case cerrdefs.IsNotFound(err):
		if _, err := b.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: name, Labels: map[string]string{LabelManaged: "true", LabelAgent: sum}}); err != nil {
			return "", b.classify(err, image, "creating the agent volume")
		}
		// Docker copies the image's content at the mount point into an
		// empty named volume when a container that mounts it is created;
		// Podman only when one starts, and the container never starts, so
		// the agent is also copied in, which both engines do for a created
		// container.
		id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeVolume, Source: name, Target: AgentDir})
		if err != nil {
			return "", fmt.Errorf("filling the agent volume %s: %w", name, err)
		}
		var file bytes.Buffer
		err = agentTar(&file, b.opts.AgentPath, false)
		if err == nil {
			// Into the mount point itself: Podman writes a copy to "/" into
			// the container's own layer, past the volume.
			_, err = b.cli.CopyToContainer(ctx, id, client.CopyToContainerOptions{DestinationPath: AgentDir, Content: &file})
		}
		b.removeProbe(id)
		if err != nil {
			return "", fmt.Errorf("copying the agent into the agent volume %s: %w", name, err)
		}
	default:
		return "", b.classify(err, image, "inspecting the agent volume")
	}
	// Whatever made it, the volume must hold exactly this agent.
	id, err := b.probeContainer(ctx, image, mount.Mount{Type: mount.TypeVolume, Source: name, Target: "/probe", ReadOnly: true,
		VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	if err != nil {
		return "", fmt.Errorf("checking the agent volume %s: %w", name, err)
	}
	defer b.removeProbe(id)
	got, err := b.readFromContainer(ctx, id, "/probe/agent")
	if err != nil || sha256Hex(got) != sum {
		return "", fmt.Errorf("the agent volume %s does not hold the agent %s (%v): remove it (`docker volume rm %s`) and start again", name, sum[:16], err, name)
	}
	return name, nil
}
