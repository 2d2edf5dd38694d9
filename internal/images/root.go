package images

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
)

// RootTag is the local tag of the bare Debian trixie image that the "root"
// parent in the registry stands for.
const RootTag = "mcp-code-runner/debian:trixie"

// PullRef is the registry image that becomes RootTag where a registry is
// reachable, unless the root_image setting names another (a mirror's copy).
const PullRef = "debian:trixie-slim"

// Suite is the Debian release the root image is bootstrapped from.
const Suite = "trixie"

// pullIdleTimeout ends a pull that reports no progress for this long, so that
// a daemon without a registry falls back to debootstrap quickly.
const pullIdleTimeout = 20 * time.Second

// rootPath is PATH in the root image, as in Debian's official images.
const rootPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// EnsureRoot makes sure RootTag exists for platform and returns its image
// ID. It uses the local image if there is one of that platform; otherwise it
// tags rootImage (empty: PullRef) when the daemon has it for that platform,
// or pulls it for platform and tags it; otherwise it bootstraps Debian for
// platform with debootstrap from mirror (empty: the host's apt
// configuration) and loads the result. A failed pull is a *PullError; when
// debootstrap fails too, the error is a *RootError with both. Progress goes
// to log.
func EnsureRoot(ctx context.Context, cli *client.Client, rootImage string, platform ocispec.Platform, mirror string, log io.Writer) (string, error) {
	if log == nil {
		log = io.Discard
	}
	if rootImage == "" {
		rootImage = PullRef
	}
	if err := CheckRootImage(rootImage); err != nil {
		return "", err
	}
	if id, err := imageIDFor(ctx, cli, RootTag, platform); err != nil || id != "" {
		return id, err
	}
	// An image pulled or loaded by hand (the fix for a registry that wants
	// credentials, or a daemon without one) is used as it is.
	local, err := imageIDFor(ctx, cli, rootImage, platform)
	if err != nil {
		return "", err
	}
	var pullErr error
	if local == "" {
		fmt.Fprintf(log, "root image %s %s; pulling %s through the Docker daemon at %s\n", RootTag, rootState(ctx, cli, RootTag, platform), rootImage, cli.DaemonHost())
		pullErr = Pull(ctx, cli, rootImage, platform)
	}
	if pullErr == nil {
		if _, err := cli.ImageTag(ctx, client.ImageTagOptions{Source: rootImage, Target: RootTag}); err != nil {
			return "", fmt.Errorf("tagging %s as %s: %w", rootImage, RootTag, err)
		}
		return imageID(ctx, cli, RootTag)
	}
	if ctx.Err() != nil {
		return "", ctx.Err()
	}
	fmt.Fprintf(log, "%v\nbootstrapping Debian %s with debootstrap instead\n", pullErr, Suite)
	if err := bootstrap(ctx, cli, platform, mirror, log); err != nil {
		return "", &RootError{Pull: pullErr, Bootstrap: err}
	}
	return imageID(ctx, cli, RootTag)
}

// imageID returns the ID of ref, or "" when the image does not exist.
func imageID(ctx context.Context, cli *client.Client, ref string) (string, error) {
	res, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	return res.ID, nil
}

// imageIDFor returns the ID of ref, or "" when it does not exist or is of
// another architecture than platform's (it is then replaced).
func imageIDFor(ctx context.Context, cli *client.Client, ref string, platform ocispec.Platform) (string, error) {
	res, err := cli.ImageInspect(ctx, ref)
	if cerrdefs.IsNotFound(err) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("inspecting image %s: %w", ref, err)
	}
	if res.Architecture != "" && platform.Architecture != "" && dockerengine.GoArch(res.Architecture) != platform.Architecture {
		return "", nil
	}
	return res.ID, nil
}

// rootState says why the root image ref cannot serve a build for
// platform: it is missing, or it was made for another architecture (it is
// then replaced).
func rootState(ctx context.Context, cli *client.Client, ref string, platform ocispec.Platform) string {
	res, err := cli.ImageInspect(ctx, ref)
	if err != nil || res.Architecture == "" || dockerengine.GoArch(res.Architecture) == platform.Architecture {
		return "is missing"
	}
	return fmt.Sprintf("is for linux/%s, not linux/%s as this build asks (it is replaced)", dockerengine.GoArch(res.Architecture), platform.Architecture)
}

// bootstrap runs debootstrap for platform's architecture into a temporary
// directory and loads the result as RootTag. Another architecture than
// this machine's needs an emulator (see checkEmulation).
func bootstrap(ctx context.Context, cli *client.Client, platform ocispec.Platform, mirror string, log io.Writer) error {
	debootstrap, err := exec.LookPath("debootstrap")
	if err != nil {
		debootstrap = "/usr/sbin/debootstrap" // root's PATH has it; others' may not
	}
	if _, err := os.Stat(debootstrap); err != nil {
		return errors.New("debootstrap is not installed: install it with `apt-get install -y debootstrap` (or run scripts/ensure-docker.sh as root), or make `docker pull " + PullRef + "` work, then retry")
	}
	if os.Geteuid() != 0 {
		return errors.New("debootstrap must run as root: run `mcp-code-runner images build` as root once (e.g. with sudo), or make `docker pull " + PullRef + "` work, then retry")
	}
	arch := archNames[platform.Architecture].debian
	if err := checkEmulation(binfmtDir, hostArch, platform.Architecture); err != nil {
		return err
	}
	if mirror == "" {
		if mirror, err = HostMirror(); err != nil {
			return err
		}
	}
	tmp := os.Getenv("TMPDIR")
	if tmp == "" {
		tmp = "/var/tmp" // on disk, and not mounted noexec/nodev like some /tmp
	}
	dir, err := os.MkdirTemp(tmp, "mcp-code-runner-rootfs-")
	if err != nil {
		return fmt.Errorf("creating a directory for the root file system: %w", err)
	}
	defer os.RemoveAll(dir)

	start := time.Now()
	fmt.Fprintf(log, "debootstrap --variant=minbase --arch %s %s %s %s\n", arch, Suite, dir, mirror)
	cmd := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--arch", arch, Suite, dir, mirror)
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("debootstrap --variant=minbase --arch %s %s %s %s: %w (see the output above; the mirror comes from the host's apt configuration, or set MCR_DEBIAN_MIRROR)", arch, Suite, dir, mirror, err)
	}

	if err := slim(dir); err != nil {
		return err
	}
	if err := loadRoot(ctx, cli, dir, RootTag, platform, fmt.Sprintf("debootstrap --variant=minbase --arch %s %s from %s", arch, Suite, mirror), log); err != nil {
		return err
	}
	fmt.Fprintf(log, "bootstrapped %s in %s\n", RootTag, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// slimExcludes are the paths dpkg leaves out in slim images, as in Debian's
// official -slim images; copyright files stay.
var slimExcludes = []string{"/usr/share/doc/*", "/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*", "/usr/share/groff/*", "/usr/share/lintian/*", "/usr/share/linda/*"}

// slim makes the bootstrapped root file system at dir like debian:*-slim:
// no package caches or lists, no documentation, manual pages or message
// catalogs, and a dpkg configuration that keeps them out of later packages.
func slim(dir string) error {
	var cfg strings.Builder
	cfg.WriteString("# Written by mcp-code-runner, as in Debian's -slim images.\n")
	for _, p := range slimExcludes {
		cfg.WriteString("path-exclude " + p + "\n")
	}
	cfg.WriteString("path-include /usr/share/doc/*/copyright\n")
	if err := os.WriteFile(filepath.Join(dir, "etc/dpkg/dpkg.cfg.d/docker"), []byte(cfg.String()), 0o644); err != nil {
		return fmt.Errorf("configuring dpkg in the root file system: %w", err)
	}
	globs := append([]string{"/var/cache/apt/archives/*.deb", "/var/cache/apt/*.bin", "/var/lib/apt/lists/*_*"}, slimExcludes...)
	for _, g := range globs {
		matches, err := filepath.Glob(filepath.Join(dir, g))
		if err != nil {
			return fmt.Errorf("slimming the root file system: %w", err)
		}
		for _, m := range matches {
			keep := filepath.Join(m, "copyright")
			if _, err := os.Lstat(keep); err == nil && strings.HasPrefix(g, "/usr/share/doc/") {
				entries, _ := os.ReadDir(m)
				for _, e := range entries {
					if e.Name() != "copyright" {
						if err := os.RemoveAll(filepath.Join(m, e.Name())); err != nil {
							return fmt.Errorf("slimming the root file system: %w", err)
						}
					}
				}
				continue
			}
			if err := os.RemoveAll(m); err != nil {
				return fmt.Errorf("slimming the root file system: %w", err)
			}
		}
	}
	return nil
}

// HostMirror returns the Debian archive mirror configured for apt on this
// machine, from /etc/apt/sources.list and /etc/apt/sources.list.d.
func HostMirror() (string, error) {
	files := map[string]string{}
	names, _ := filepath.Glob("/etc/apt/sources.list.d/*.list")
	more, _ := filepath.Glob("/etc/apt/sources.list.d/*.sources")
	for _, name := range append(append([]string{"/etc/apt/sources.list"}, names...), more...) {
		if data, err := os.ReadFile(name); err == nil {
			files[name] = string(data)
		}
	}
	if m := pickMirror(files); m != "" {
		return m, nil
	}
	return "", errors.New("no Debian archive found in the host's apt configuration (/etc/apt/sources.list, /etc/apt/sources.list.d): set MCR_DEBIAN_MIRROR (or --mirror) to a Debian mirror URL, or make `docker pull " + PullRef + "` work")
}

// pickMirror returns the first main Debian archive among the apt sources in
// files (name -> content; names ending in ".sources" are deb822, others are
// one-line style), reading /etc/apt/sources.list first and the rest in name
// order. It returns "" when there is none.
func pickMirror(files map[string]string) string {
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := path.Base(names[i]) == "sources.list", path.Base(names[j]) == "sources.list"; a != b {
			return a
		}
		return names[i] < names[j]
	})
	for _, n := range names {
		var entries []aptSource
		if strings.HasSuffix(n, ".sources") {
			entries = parseDeb822(files[n])
		} else {
			entries = parseOneLine(files[n])
		}
		for _, e := range entries {
			if isDebianArchive(e) {
				return strings.TrimRight(e.uri, "/")
			}
		}
	}
	return ""
}

// aptSource is one binary package source: a URI and its suites.
type aptSource struct {
	uri    string
	suites []string
}

// parseOneLine parses sources.list lines: "deb [options] URI suite [component...]".
func parseOneLine(text string) []aptSource {
	var out []aptSource
	for line := range strings.SplitSeq(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) < 3 || f[0] != "deb" {
			continue
		}
		f = f[1:]
		if strings.HasPrefix(f[0], "[") {
			for len(f) > 0 && !strings.HasSuffix(f[0], "]") {
				f = f[1:]
			}
			if len(f) > 0 {
				f = f[1:]
			}
		}
		if len(f) >= 2 {
			out = append(out, aptSource{uri: f[0], suites: []string{f[1]}})
		}
	}
	return out
}

// parseDeb822 parses deb822 stanzas (Types, URIs, Suites, Enabled).
func parseDeb822(text string) []aptSource {
	var out []aptSource
	fields := map[string]string{}
	var last string
	flush := func() {
		if strings.EqualFold(fields["enabled"], "no") || !strings.Contains(" "+fields["types"]+" ", " deb ") {
			fields = map[string]string{}
			return
		}
		for uri := range strings.FieldsSeq(fields["uris"]) {
			out = append(out, aptSource{uri: uri, suites: strings.Fields(fields["suites"])})
		}
		fields = map[string]string{}
	}
	for line := range strings.SplitSeq(text+"\n", "\n") {
		switch {
		case strings.HasPrefix(line, "#"):
		case strings.TrimSpace(line) == "":
			if len(fields) > 0 {
				flush()
			}
		case line[0] == ' ' || line[0] == '\t':
			if last != "" {
				fields[last] += " " + strings.TrimSpace(line)
			}
		default:
			k, v, ok := strings.Cut(line, ":")
			if !ok {
				continue
			}
			last = strings.ToLower(strings.TrimSpace(k))
			fields[last] = strings.TrimSpace(v)
		}
	}
	return out
}

// isDebianArchive reports whether s is the main Debian archive (or a mirror
// or snapshot of it): an http(s) or file URI with a path element "debian",
// and not the security archive.
func isDebianArchive(s aptSource) bool {
	u, err := url.Parse(s.uri)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "file") {
		return false
	}
	if strings.Contains(u.Host, "security") {
		return false
	}
	for _, suite := range s.suites {
		if strings.HasSuffix(suite, "-security") || strings.HasSuffix(suite, "/updates") {
			return false
		}
	}
	return slices.Contains(strings.Split(u.Path, "/"), "debian")
}
