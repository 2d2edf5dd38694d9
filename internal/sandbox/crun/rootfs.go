//go:build linux

package crun

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// imageRoot is one image's root filesystem as this backend's sandboxes see
// it: the image's layers under an overlay whose upper layer holds only the
// points where sandboxes mount their own files (the agent, /etc/hosts,
// /etc/hostname).
// Every sandbox mounts it read-only; what a sandbox writes goes to its own
// tmpfs mounts.
type imageRoot struct {
	dir string // the overlay's mount point
	// readOnly is a read-only bind mount of dir: the root of a restored
	// sandbox, which crun does not make read-only itself (a bind mount
	// keeps its source's read-only flag).
	readOnly string
	env      []string // the image's environment
}

// imageRoots are a backend's mounted image roots, by image ID, under one
// directory of their own.
type imageRoots struct {
	dir    string
	mu     sync.Mutex
	byID   map[string]*imageRoot
	closed bool
}

func newImageRoots(dir string) *imageRoots {
	return &imageRoots{dir: dir, byID: map[string]*imageRoot{}}
}

// get returns the root of the image id made of layers (top first),
// mounting it on first use.
func (r *imageRoots) get(id string, layers []string, env []string) (*imageRoot, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if root, ok := r.byID[id]; ok {
		return root, nil
	}
	if r.closed {
		return nil, errors.New("crun backend: closed")
	}
	if len(layers) == 0 {
		return nil, fmt.Errorf("image %s has no layers to mount", id)
	}
	for _, l := range layers {
		if _, err := os.Stat(l); err != nil {
			return nil, fmt.Errorf("image %s: its layer %s is not visible to this server (%v); the crun backend needs the Docker daemon on this host, in this mount namespace", id, l, err)
		}
	}
	name := strings.TrimPrefix(id, "sha256:")
	if len(name) > 16 {
		name = name[:16]
	}
	base := filepath.Join(r.dir, name)
	upper, work, merged, readOnly := base+"/upper", base+"/work", base+"/root", base+"/ro"
	for _, d := range []string{upper, work, merged, readOnly} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, fmt.Errorf("image root for %s: %w", id, err)
		}
	}
	// Mount points must exist before the sandbox's root is read-only, and
	// are made here once, not by each sandbox's runtime at once.
	for _, p := range []string{"opt/mcp-code-runner", "etc", "workspace", "tmp"} {
		if err := os.MkdirAll(filepath.Join(upper, p), 0o755); err != nil {
			return nil, fmt.Errorf("image root for %s: %w", id, err)
		}
	}
	for _, f := range []string{"opt/mcp-code-runner/agent", "etc/hosts", "etc/hostname"} {
		if err := touch(upper, f, layers); err != nil {
			return nil, fmt.Errorf("image root for %s: %w", id, err)
		}
	}
	// A root left mounted here (a process of the same PID and start
	// cannot exist, but a test may reuse a state directory) goes first: a
	// mount stacked on it would hide it from every later unmount.
	for _, m := range []string{readOnly, merged} {
		if err := unmountAll(m); err != nil {
			return nil, fmt.Errorf("image root for %s: %w", id, err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", strings.Join(layers, ":"), upper, work)
	if len(opts) >= os.Getpagesize() {
		return nil, fmt.Errorf("image %s has too many layers (%d) for one overlay mount; flatten it or use the docker backend", id, len(layers))
	}
	if err := unix.Mount("overlay", merged, "overlay", 0, opts); err != nil {
		return nil, fmt.Errorf("mounting the root of image %s: %w (the crun backend needs root and overlayfs)", id, err)
	}
	err := unix.Mount(merged, readOnly, "", unix.MS_BIND, "")
	if err == nil {
		err = unix.Mount("", readOnly, "", unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV, "")
	}
	if err != nil {
		_ = unix.Unmount(readOnly, unix.MNT_DETACH)
		_ = unix.Unmount(merged, unix.MNT_DETACH)
		return nil, fmt.Errorf("the read-only view of image %s's root: %w", id, err)
	}
	root := &imageRoot{dir: merged, readOnly: readOnly, env: env}
	r.byID[id] = root
	return root, nil
}

// touch makes an empty file at rel in the upper layer unless a layer
// already has one there (a file in the upper layer would hide it).
func touch(upper, rel string, layers []string) error {
	for _, l := range layers {
		if _, err := os.Lstat(filepath.Join(l, rel)); err == nil {
			return nil
		}
	}
	f, err := os.OpenFile(filepath.Join(upper, rel), os.O_CREATE|os.O_WRONLY, 0o644) // under our state directory
	if err != nil {
		return err
	}
	return f.Close()
}

// close unmounts every root (lazily: running sandboxes keep theirs) and
// removes their directory.
func (r *imageRoots) close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	clear(r.byID)
	return removeRoots(r.dir)
}

// removeRoots unmounts the image roots under dir and removes dir. A root
// that stays mounted keeps dir: removing files through a mounted overlay
// would write whiteouts, not harm the image, but it is not ours to do.
func removeRoots(dir string) error {
	images, _ := os.ReadDir(dir)
	for _, img := range images {
		for _, m := range []string{"ro", "root"} {
			if err := unmountAll(filepath.Join(dir, img.Name(), m)); err != nil {
				return err
			}
		}
	}
	return os.RemoveAll(dir)
}

// unmountAll unmounts path (lazily: sandboxes running on it keep it) until
// nothing is mounted there, and then checks that it is an ordinary
// directory of its parent's file system.
func unmountAll(path string) error {
	for range 16 {
		err := unix.Unmount(path, unix.MNT_DETACH)
		if errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
			break // not a mount point (or not there)
		}
		if err != nil {
			return fmt.Errorf("unmounting %s: %w", path, err)
		}
	}
	var st, parent unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return nil // nothing there to be mounted
	}
	if err := unix.Stat(filepath.Dir(path), &parent); err == nil && st.Dev != parent.Dev {
		return fmt.Errorf("%s stays mounted", path)
	}
	return nil
}

// sweepRoots unmounts and removes the image roots of servers that are gone
// as self tells (a directory "<pid>-<start>-<host tag>-<n>" under dir, or
// "<pid>-<start>-<n>" as older servers named them).
func sweepRoots(dir string, self sandbox.Owner, log *slog.Logger) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		parts := strings.Split(e.Name(), "-")
		if len(parts) != 3 && len(parts) != 4 {
			continue
		}
		hostTag := ""
		if len(parts) == 4 {
			hostTag = parts[2]
		}
		if _, err := strconv.Atoi(parts[0]); err != nil || self.AliveNamed(parts[0], parts[1], hostTag) {
			continue
		}
		owned := filepath.Join(dir, e.Name())
		if err := removeRoots(owned); err != nil {
			log.Warn("removing a gone server's image roots", "dir", owned, "err", err)
		}
	}
}
