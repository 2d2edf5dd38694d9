package images

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// A probe runs a language's measuring commands (its version, its
// preinstalled packages) in throwaway containers of an image just built.
type probe struct {
	cli *client.Client
	// podman is whether the engine is Podman, asked once per build: it
	// needs other ulimits and keeps the output another way.
	podman bool
	// emulated is whether the images are for another architecture than
	// the daemon's, so that their programs run under qemu-user.
	emulated bool
}

// newProbe returns the probe for images of platform on the daemon of cli,
// which runs daemon.
func newProbe(ctx context.Context, cli *client.Client, platform, daemon ocispec.Platform) (probe, error) {
	podman, err := dockerengine.IsPodman(ctx, cli)
	if err != nil {
		return probe{}, fmt.Errorf("asking the daemon which engine it is: %w", err)
	}
	return probe{cli: cli, podman: podman, emulated: platform.Architecture != daemon.Architecture}, nil
}

// Measuring commands get at least probeMemory and probeTimeout. Under
// emulation they get emulatedMemoryFactor times the memory and
// emulatedTimeFactor times the time: qemu-user translates every program, and
// its cost is large for big runtimes (`ghc --version` peaks at 1.65 GB under
// qemu-user on amd64, and needs a few MB natively).
const (
	probeMemory          = 512 << 20
	probeTimeout         = 2 * time.Minute
	emulatedMemoryFactor = 4
	emulatedTimeFactor   = 5
)

// limits returns the memory limit and the time one measuring command of l
// gets: the larger of probeMemory and the language's own memory limit, and
// probeTimeout, each raised under emulation.
func (p probe) limits(l languages.Language) (memory int64, timeout time.Duration) {
	memory, timeout = probeMemory, probeTimeout
	if own := int64(l.Limits.MemoryMB) << 20; own > memory {
		memory = own
	}
	if p.emulated {
		memory *= emulatedMemoryFactor
		timeout *= emulatedTimeFactor
	}
	return memory, timeout
}

// version runs a language's version command in a throwaway container of
// image and returns the first non-empty line it printed.
func (p probe) version(ctx context.Context, image string, l languages.Language) (string, error) {
	stdout, stderr, err := p.run(ctx, image, l, l.Version)
	if err != nil {
		return "", err
	}
	for _, out := range []string{stdout, stderr} {
		for line := range strings.SplitSeq(out, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				return line, nil
			}
		}
	}
	return "", fmt.Errorf("%q printed nothing", strings.Join(l.Version, " "))
}

// preinstalled runs a language's preinstalled command in a throwaway
// container of image and returns the packages it listed ("name version"
// lines on stdout), names to versions.
func (p probe) preinstalled(ctx context.Context, image string, l languages.Language) (map[string]string, error) {
	stdout, _, err := p.run(ctx, image, l, l.Preinstalled)
	if err != nil {
		return nil, err
	}
	return ParsePreinstalled(stdout)
}

// ParsePreinstalled reads "name version" lines (blank lines ignored) into
// a map of names to versions.
func ParsePreinstalled(out string) (map[string]string, error) {
	pkgs := map[string]string{}
	for line := range strings.SplitSeq(out, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		name, version, ok := strings.Cut(line, " ")
		if !ok || strings.TrimSpace(version) == "" || strings.Contains(strings.TrimSpace(version), " ") {
			return nil, fmt.Errorf("package line %q: want \"name version\"", line)
		}
		pkgs[name] = strings.TrimSpace(version)
	}
	if len(pkgs) == 0 {
		return nil, errors.New("no packages listed")
	}
	return pkgs, nil
}

// run runs cmd with l's environment in a throwaway container of image (no
// network, read-only root, the sandbox user, tmpfs /tmp and /workspace, no
// logs, the limits of p.limits) and returns what it printed; a non-zero exit
// is an error, which says when the memory limit killed the command.
func (p probe) run(ctx context.Context, image string, l languages.Language, cmd []string) (stdoutText, stderrText string, err error) {
	cli, podman := p.cli, p.podman
	memory, timeout := p.limits(l)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	created, err := p.create(ctx, image, l, cmd, memory)
	if err != nil {
		return "", "", fmt.Errorf("creating a container: %w", err)
	}
	defer func() {
		_, _ = cli.ContainerRemove(context.WithoutCancel(ctx), created.ID, client.ContainerRemoveOptions{Force: true})
	}()

	// Docker: attach before the start, so nothing printed is missed. Podman
	// refuses to attach to a container that has not started (409), so
	// there the engine keeps the output and it is read after the exit.
	var output io.Reader
	if !podman {
		att, err := cli.ContainerAttach(ctx, created.ID, client.ContainerAttachOptions{Stream: true, Stdout: true, Stderr: true})
		if err != nil {
			return "", "", fmt.Errorf("attaching to the container: %w", err)
		}
		defer att.Conn.Close()
		output = att.Reader
	}
	wait := cli.ContainerWait(ctx, created.ID, client.ContainerWaitOptions{Condition: container.WaitConditionNextExit})
	if _, err := cli.ContainerStart(ctx, created.ID, client.ContainerStartOptions{}); err != nil {
		return "", "", fmt.Errorf("starting %q: %w", strings.Join(cmd, " "), err)
	}
	var status int64
	if podman {
		if status, err = dockerengine.WaitExit(ctx, cli, created.ID, wait); err != nil {
			return "", "", fmt.Errorf("waiting for %q: %w", strings.Join(cmd, " "), err)
		}
		logs, err := cli.ContainerLogs(ctx, created.ID, client.ContainerLogsOptions{ShowStdout: true, ShowStderr: true})
		if err != nil {
			return "", "", fmt.Errorf("reading the output of %q: %w", strings.Join(cmd, " "), err)
		}
		defer logs.Close()
		output = logs
	}
	var stdout, stderr bytes.Buffer
	if _, err := stdcopy.StdCopy(&stdout, &stderr, io.LimitReader(output, 1<<20)); err != nil {
		return "", "", fmt.Errorf("reading the output of %q: %w", strings.Join(cmd, " "), err)
	}
	if !podman {
		if status, err = dockerengine.WaitExit(ctx, cli, created.ID, wait); err != nil {
			return "", "", fmt.Errorf("waiting for %q: %w", strings.Join(cmd, " "), err)
		}
	}
	if status != 0 {
		return "", "", p.failure(ctx, created.ID, cmd, status, memory, strings.TrimSpace(stdout.String()+stderr.String()))
	}
	return stdout.String(), stderr.String(), nil
}

// create makes the throwaway container of run: no network, a read-only
// root, the sandbox user, tmpfs /tmp and /workspace, no logs (Podman keeps
// them, for ContainerLogs), memory bytes of memory and no swap.
func (p probe) create(ctx context.Context, image string, l languages.Language, cmd []string, memory int64) (client.ContainerCreateResult, error) {
	pids := int64(128)
	logConfig := container.LogConfig{Type: "none"}
	var ulimits []*container.Ulimit
	if p.podman {
		logConfig = container.LogConfig{} // the engine's default keeps the output for ContainerLogs
		// Podman raises nofile and nproc to their maxima unless told,
		// which a root engine without CAP_SYS_RESOURCE may not do.
		ulimits = []*container.Ulimit{{Name: "nofile", Soft: 1024, Hard: 1024}, {Name: "nproc", Soft: dockerengine.PodmanNproc, Hard: dockerengine.PodmanNproc}}
	}
	return p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Image: image,
		Config: &container.Config{
			Cmd:             cmd,
			Env:             l.Env,
			User:            wire.SandboxUser,
			WorkingDir:      wire.WorkspacePath,
			AttachStdout:    true,
			AttachStderr:    true,
			NetworkDisabled: true,
		},
		HostConfig: &container.HostConfig{
			NetworkMode:    "none",
			ReadonlyRootfs: true,
			CapDrop:        []string{"ALL"},
			SecurityOpt:    []string{"no-new-privileges"},
			LogConfig:      logConfig,
			Tmpfs: map[string]string{
				"/tmp":             "rw,nosuid,nodev,size=64m",
				wire.WorkspacePath: "rw,nosuid,nodev,size=16m,mode=0755," + dockerengine.TmpfsOwner(p.podman),
			},
			Resources: container.Resources{Memory: memory, MemorySwap: memory, PidsLimit: &pids, Ulimits: ulimits},
		},
	})
}

// failure says why cmd exited with status, naming the memory limit when
// the OOM killer (or a SIGKILL, which only it sends here) ended it.
func (p probe) failure(ctx context.Context, id string, cmd []string, status, memory int64, out string) error {
	ins, err := p.cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	switch {
	case err == nil && ins.Container.State != nil && ins.Container.State.OOMKilled:
		return fmt.Errorf("%q was killed for using more than its %d MB of memory (status %d): raise the language's memory_mb in the registry: %s",
			strings.Join(cmd, " "), memory>>20, status, out)
	case status == 128+9:
		// SIGKILL, which nothing but the OOM killer sends here; the
		// engine may report the exit before the OOM event (or never,
		// as Podman 4.3 does).
		return fmt.Errorf("%q was killed (status %d, SIGKILL), as the OOM killer does at its %d MB memory limit: if it needs more, raise the language's memory_mb in the registry: %s",
			strings.Join(cmd, " "), status, memory>>20, out)
	}
	return fmt.Errorf("%q exited with status %d: %s", strings.Join(cmd, " "), status, out)
}
