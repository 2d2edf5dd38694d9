//go:build linux

package crun

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// Mounts made once by the backend in place of tmpfs mounts of each
// checkpointable sandbox's own.
//
// CRIU saves every tmpfs of a sandbox with a `tar --gzip` at a dump and
// extracts it at a restore: two processes each, tens of milliseconds on a
// loaded host. Three of a checkpointable sandbox's tmpfs mounts hold
// nothing of the sandbox's: the masked directories (/proc/acpi,
// /sys/firmware where the kernel has them), which crun covers with an
// empty read-only tmpfs, and on cgroup v1 the tmpfs at /sys/fs/cgroup
// that holds one empty directory per controller, where the sandbox's own
// cgroup directories are bound. For such a sandbox the backend binds, read-only, a tmpfs
// of its own made once: an empty read-only one at each masked directory,
// and one holding the controllers' directories, read-only, at
// /sys/fs/cgroup. Bind mounts are external to CRIU (crun names them), so
// neither is saved nor extracted. What the sandbox sees is the same: an
// empty tmpfs it cannot write in (mode 1777, as crun's mask), and the
// controllers' directories with its cgroup's bound on them; no sandbox can
// write to either, so sharing them shares nothing.
//
// The same holds for /dev: a checkpointable sandbox runs in a user
// namespace, where its device files are the host's, bound one by one, and
// its /dev's own entries are the symbolic links and directories crun
// makes, the same in every sandbox, in a directory only root may write.
// The backend makes that tree once on a read-only tmpfs and binds it at
// /dev; the device files, /dev/pts, /dev/shm and /dev/mqueue are mounted
// on it as before. CRIU then extracts three archives at a restore, not
// four.

// masksBase holds the masks, shared by every server on the host (what they
// hold is the host's: its masked directories and cgroup controllers) and
// never unmounted, like the CRIU cache's tmpfs: a server that stops may
// leave sandboxes that the next one restores, and two servers may share
// a host.
const masksBase = "/run/mcr-crun-masks"

// masks are the backend's mounts that stand in for a sandbox's own.
type masks struct {
	// emptyDir is an empty read-only tmpfs, bound at each of dirs.
	emptyDir string
	// dirs are the masked paths that are directories on this host.
	dirs []string
	// cgroupDir, on cgroup v1, is a read-only tmpfs holding an empty
	// directory per controller, bound at /sys/fs/cgroup; "" on v2.
	cgroupDir string
	// devDir is a read-only tmpfs holding what crun makes in a
	// checkpointable sandbox's /dev (devTree), bound at /dev.
	devDir string
}

// devTree is a checkpointable sandbox's /dev as crun makes it: the mount
// points of the host's device files, crun's symbolic links, and the
// directories /dev/pts, /dev/shm and /dev/mqueue are mounted on.
var devTree = []struct {
	name   string
	mode   os.FileMode // a regular file, a directory or a symbolic link
	target string      // a symbolic link's
}{
	{"core", os.ModeSymlink, "/proc/kcore"},
	{"fd", os.ModeSymlink, "/proc/self/fd"},
	{"stdin", os.ModeSymlink, "/proc/self/fd/0"},
	{"stdout", os.ModeSymlink, "/proc/self/fd/1"},
	{"stderr", os.ModeSymlink, "/proc/self/fd/2"},
	{"ptmx", os.ModeSymlink, "pts/ptmx"},
	{"pts", os.ModeDir | 0o755, ""},
	{"shm", os.ModeDir | os.ModeSticky | 0o777, ""},
	{"mqueue", os.ModeDir | os.ModeSticky | 0o777, ""},
	{"null", 0o666, ""},
	{"zero", 0o666, ""},
	{"full", 0o666, ""},
	{"random", 0o666, ""},
	{"urandom", 0o666, ""},
	{"tty", 0o666, ""},
}

// masksState makes the backend's masks once.
type masksState struct {
	once sync.Once
	m    *masks
}

// masks returns the backend's masks, making them the first time; nil when
// they cannot be made, and each sandbox then has its own tmpfs mounts.
func (b *Backend) masks() *masks {
	b.maskState.once.Do(func() {
		m, err := makeMasks(masksBase, b.cgroupV2)
		if err != nil {
			b.log.Warn("each checkpointable sandbox has tmpfs mounts of its own, which CRIU saves one by one", "err", err)
			return
		}
		b.maskState.m = m
	})
	return b.maskState.m
}

// makeMasks mounts, under dir, the empty tmpfs and on cgroup v1 the
// controllers' one, unless a server already did.
func makeMasks(dir string, cgroupV2 bool) (*masks, error) {
	m := &masks{emptyDir: filepath.Join(dir, "empty")}
	for _, p := range maskedPaths {
		if fi, err := os.Stat(p); err == nil && fi.IsDir() {
			m.dirs = append(m.dirs, p)
		}
	}
	// crun's mask of a directory: a read-only tmpfs, size=0k, its root
	// mode 1777.
	if err := mountTmpfsOnce(m.emptyDir, "size=0k", nil); err != nil {
		return nil, err
	}
	m.devDir = filepath.Join(dir, "dev")
	if err := mountTmpfsOnce(m.devDir, "mode=755,size=64k", makeDevTree); err != nil {
		return nil, err
	}
	if cgroupV2 {
		return m, nil
	}
	controllers := cgroupControllers()
	if len(controllers) == 0 {
		return nil, errors.New("no cgroup v1 controller found under /sys/fs/cgroup")
	}
	m.cgroupDir = filepath.Join(dir, "cgroup")
	if err := mountTmpfsOnce(m.cgroupDir, "mode=755,size=1024k", func(dir string) error {
		for _, c := range controllers {
			if err := os.Mkdir(filepath.Join(dir, c), 0o755); err != nil && !errors.Is(err, os.ErrExist) {
				return err
			}
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, c := range controllers {
		if fi, err := os.Stat(filepath.Join(m.cgroupDir, c)); err != nil || !fi.IsDir() {
			return nil, fmt.Errorf("%s lacks the cgroup controller %s's directory", m.cgroupDir, c)
		}
	}
	return m, nil
}

// mountTmpfsOnce mounts a tmpfs (opts) at dir unless one is there, fills
// it (fill may be nil), and makes it read-only.
func mountTmpfsOnce(dir, opts string, fill func(dir string) error) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if isTmpfs(dir) {
		return nil // another server's, or this one's before a restart
	}
	const flags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC
	if err := unix.Mount("tmpfs", dir, "tmpfs", flags, opts); err != nil {
		return fmt.Errorf("mounting a tmpfs at %s: %w", dir, err)
	}
	if fill != nil {
		if err := fill(dir); err != nil {
			return err
		}
	}
	if err := unix.Mount("", dir, "", unix.MS_REMOUNT|unix.MS_RDONLY|flags, opts); err != nil {
		return fmt.Errorf("making the tmpfs at %s read-only: %w", dir, err)
	}
	return nil
}

// makeDevTree makes devTree in dir.
func makeDevTree(dir string) error {
	for _, e := range devTree {
		p := filepath.Join(dir, e.name)
		var err error
		switch {
		case e.mode&os.ModeSymlink != 0:
			err = os.Symlink(e.target, p)
		case e.mode.IsDir():
			if err = os.Mkdir(p, e.mode.Perm()); err == nil {
				err = os.Chmod(p, e.mode) // past the umask, with the sticky bit
			}
		default:
			if err = os.WriteFile(p, nil, e.mode.Perm()); err == nil {
				err = os.Chmod(p, e.mode.Perm())
			}
		}
		if err != nil {
			return fmt.Errorf("making /dev's %s in %s: %w", e.name, dir, err)
		}
	}
	return nil
}

// sources maps the destinations of a checkpointed sandbox's masks to
// this backend's, for its restore.
func (m *masks) sources() map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for _, d := range m.dirs {
		out[d] = m.emptyDir
	}
	if m.cgroupDir != "" {
		out["/sys/fs/cgroup"] = m.cgroupDir
	}
	if m.devDir != "" {
		out["/dev"] = m.devDir
	}
	return out
}
