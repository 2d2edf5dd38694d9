package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// binfmtDir is where the kernel lists the binfmt_misc handlers that run
// programs of other architectures.
const binfmtDir = "/proc/sys/fs/binfmt_misc"

// archNames are the architectures the runtime images build for
// ([languages.KnownArchitectures], which the registry's languages may name),
// by their Go name (as in a platform "linux/arm64"): the Debian architecture
// that debootstrap takes, and the binfmt_misc handler qemu-user-static
// registers to run its programs on another machine.
var archNames = map[string]struct{ debian, binfmt string }{
	"amd64": {debian: "amd64", binfmt: "qemu-x86_64"},
	"arm64": {debian: "arm64", binfmt: "qemu-aarch64"},
}

// supportedPlatforms lists the platforms the runtime images build for.
func supportedPlatforms() string {
	platforms := make([]string, len(languages.KnownArchitectures))
	for i, a := range languages.KnownArchitectures {
		platforms[i] = "linux/" + a
	}
	return strings.Join(platforms, ", ")
}

// ParsePlatform reads a platform as `images build --platform` takes it:
// "linux/arm64" or "linux/amd64" (also "linux/aarch64", "linux/x86_64", and
// an arm64 variant "v8").
func ParsePlatform(s string) (ocispec.Platform, error) {
	parts := strings.Split(strings.TrimSpace(s), "/")
	if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
		return ocispec.Platform{}, fmt.Errorf("platform %q: want OS/ARCHITECTURE, one of %s", s, supportedPlatforms())
	}
	p := ocispec.Platform{OS: strings.ToLower(parts[0]), Architecture: dockerengine.GoArch(parts[1])}
	if len(parts) == 3 && (p.Architecture != "arm64" || !strings.EqualFold(parts[2], "v8")) {
		return ocispec.Platform{}, fmt.Errorf("platform %q: variant %q is not built; the images build for %s", s, parts[2], supportedPlatforms())
	}
	if err := checkPlatform(p); err != nil {
		return ocispec.Platform{}, fmt.Errorf("platform %q: %w", s, err)
	}
	return p, nil
}

// checkPlatform refuses a platform the runtime images do not build for.
func checkPlatform(p ocispec.Platform) error {
	if _, ok := archNames[p.Architecture]; p.OS != "linux" || !ok {
		return fmt.Errorf("the runtime images build for %s, not %s/%s", supportedPlatforms(), p.OS, p.Architecture)
	}
	return nil
}

// platformString is p as "os/arch".
func platformString(p ocispec.Platform) string {
	return p.OS + "/" + p.Architecture
}

// DaemonPlatform returns the OS and architecture of the daemon cli talks
// to: the platform the images are built for unless Options.Platform says
// otherwise.
func DaemonPlatform(ctx context.Context, cli *client.Client) (ocispec.Platform, error) {
	res, err := cli.Info(ctx, client.InfoOptions{})
	if err != nil {
		return ocispec.Platform{}, fmt.Errorf("asking the Docker daemon for its platform: %w", err)
	}
	return ocispec.Platform{OS: res.Info.OSType, Architecture: dockerengine.GoArch(res.Info.Architecture)}, nil
}

// checkEmulation reports whether this machine can run programs of arch (a
// Go architecture name) while debootstrap installs them: natively, or
// through a qemu-user-static handler registered in binfmt_misc (dir) with
// the F flag, so that the interpreter works inside the chroot too. Its error
// names the packages and the command that fix it.
func checkEmulation(dir, hostArch, arch string) error {
	if dockerengine.GoArch(hostArch) == arch {
		return nil
	}
	names, ok := archNames[arch]
	if !ok {
		return fmt.Errorf("the runtime images build for %s, not linux/%s", supportedPlatforms(), arch)
	}
	handler := filepath.Join(dir, names.binfmt)
	fix := fmt.Sprintf("install qemu-user-static with `apt-get install -y qemu-user-static binfmt-support` (as root; it registers the handler), "+
		"or register it yourself with `cat /usr/lib/binfmt.d/%s.conf > %s/register` (binfmt_misc mounted with `mount -t binfmt_misc binfmt_misc %s`), then retry",
		names.binfmt, dir, dir)
	why := fmt.Sprintf("bootstrapping Debian for linux/%s on this linux/%s machine runs %s programs, which needs qemu-user-static and its binfmt_misc handler %s", arch, dockerengine.GoArch(hostArch), arch, handler)
	data, err := os.ReadFile(handler)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s, and there is none: %s", why, fix)
	case err != nil:
		return fmt.Errorf("%s, and reading it failed (%v): %s", why, err, fix)
	}
	lines := strings.Split(string(data), "\n")
	if strings.TrimSpace(lines[0]) != "enabled" {
		return fmt.Errorf("%s, and it is disabled: enable it with `echo 1 > %s`, then retry", why, handler)
	}
	for _, line := range lines {
		if flags, ok := strings.CutPrefix(line, "flags:"); ok && !strings.Contains(flags, "F") {
			return fmt.Errorf("%s registered with the F flag, so that it works inside the chroot, and it has flags %q: "+
				"remove it with `echo -1 > %s` and register it again with `cat /usr/lib/binfmt.d/%s.conf > %s/register`, then retry",
				why, strings.TrimSpace(flags), handler, names.binfmt, dir)
		}
	}
	return nil
}

// hostArch is the architecture of the machine debootstrap runs on.
var hostArch = runtime.GOARCH

// execFormatHint adds to a build error that reports a program of another
// architecture the fix: an emulator on the daemon's machine.
func execFormatHint(err error, p ocispec.Platform) error {
	if err == nil || !strings.Contains(err.Error(), "exec format error") {
		return err
	}
	return fmt.Errorf("%w (the daemon's machine cannot run %s programs: install qemu-user-static and binfmt-support there, or build on a daemon that runs %s)",
		err, platformString(p), platformString(p))
}

// buildPlatform returns the platform Build builds for (want, see
// ParsePlatform, or the daemon's own when want is empty) and the daemon's.
// Building for another platform than the daemon's is said in log, because
// the images replace the daemon's own of the same tags.
func buildPlatform(ctx context.Context, cli *client.Client, want string, log io.Writer) (target, daemon ocispec.Platform, err error) {
	daemon, err = DaemonPlatform(ctx, cli)
	if err != nil {
		return ocispec.Platform{}, ocispec.Platform{}, err
	}
	if want == "" {
		if err := checkPlatform(daemon); err != nil {
			return ocispec.Platform{}, ocispec.Platform{}, fmt.Errorf("the daemon runs %s: %w; give --platform to build for another daemon", platformString(daemon), err)
		}
		return daemon, daemon, nil
	}
	p, err := ParsePlatform(want)
	if err != nil {
		return ocispec.Platform{}, ocispec.Platform{}, err
	}
	if p.Architecture != daemon.Architecture || p.OS != daemon.OS {
		fmt.Fprintf(log, "building for %s on a daemon that runs %s: the images run under emulation here, replace this daemon's images of the same tags, and are for a daemon of %s (save them with `docker save`)\n",
			platformString(p), platformString(daemon), platformString(p))
	}
	return p, daemon, nil
}
