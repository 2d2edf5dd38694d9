//go:build linux

package crun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CRIU's kernel facts cache. Every checkpoint and restore starts with
// CRIU probing the kernel (pagemap, shared memory's device, sockets,
// namespaces, the vdso): tens of milliseconds, more on a loaded host.
// CRIU keeps what it found in /run/criu.kdat, but only where /run is a
// tmpfs, so that a reboot forgets it (checkpoint-restore/criu#2905); on
// hosts whose /run is a plain directory, it probes again every time.
// There the backend keeps the cache on a tmpfs of its own, which a
// reboot forgets as well: it mounts kdatDir, has the checkpoint tools'
// criu probe once with that tmpfs as its /run (in a mount namespace of
// its own), and points /run/criu.kdat at the file. CRIU only reads the
// cache through that link; when it cannot use it (another CRIU's, or a
// reboot left the link dangling) it probes and removes the link, and
// the backend puts the link back before its next checkpoint or restore.

// kdatCache is the file CRIU reads its kernel facts from.
const kdatCache = "/run/criu.kdat"

// kdatDir is the backend's tmpfs for CRIU's cache, where /run is no tmpfs.
const kdatDir = "/run/mcp-code-runner-criu"

// kdatProbeTimeout bounds the probe that writes the cache.
const kdatProbeTimeout = 30 * time.Second

// keepKernelFacts makes CRIU's kernel facts cache last on this host, and
// says why it could not; checkpoints work without it, only slower.
func (t *checkpointTools) keepKernelFacts() error {
	if isTmpfs("/run") {
		return nil // CRIU keeps its own cache there
	}
	if err := os.MkdirAll(kdatDir, 0o700); err != nil {
		return err
	}
	if !isTmpfs(kdatDir) {
		if err := unix.Mount("tmpfs", kdatDir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "size=64k,mode=0700"); err != nil {
			return fmt.Errorf("mounting a tmpfs for CRIU's cache at %s: %w", kdatDir, err)
		}
	}
	cached := filepath.Join(kdatDir, filepath.Base(kdatCache))
	if _, err := os.Stat(cached); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), kdatProbeTimeout)
		defer cancel()
		// criu check probes the kernel and saves what it found in /run,
		// here the tmpfs, in a mount namespace the probe alone sees (Go
		// makes its mounts private before the shell runs).
		cmd := exec.CommandContext(ctx, "/bin/sh", "-c", `mount --bind "$1" /run && exec "$2" check`, "sh", kdatDir, filepath.Join(t.dir, "bin", "criu"))
		cmd.Env = t.env()
		cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("CRIU's probe for its cache: %s", lastLine(out, err))
		}
		if _, err := os.Stat(cached); err != nil {
			return errors.New("CRIU's probe left no cache")
		}
	}
	t.kdatKept = true
	return t.linkKernelFacts()
}

// linkKernelFacts points /run/criu.kdat at the backend's cache, unless it
// already does, or the cache is CRIU's own on a tmpfs /run.
func (t *checkpointTools) linkKernelFacts() error {
	if !t.kdatKept {
		return nil
	}
	cached := filepath.Join(kdatDir, filepath.Base(kdatCache))
	if target, err := os.Readlink(kdatCache); err == nil && target == cached {
		return nil
	}
	_ = os.Remove(kdatCache) // what another CRIU left, or a dangling link
	return os.Symlink(cached, kdatCache)
}

// isTmpfs says whether dir is on a tmpfs.
func isTmpfs(dir string) bool {
	var st unix.Statfs_t
	return unix.Statfs(dir, &st) == nil && st.Type == unix.TMPFS_MAGIC
}
