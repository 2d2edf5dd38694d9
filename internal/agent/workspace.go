package agent

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// readFile sends one workspace file as an Artifact frame. Only regular
// files are read, through an os.Root and without following a final symlink.
func readFile(w *frameWriter, req wire.Request) wire.Done {
	if err := wire.ValidPath(req.Path); err != nil {
		return wire.Done{Error: err.Error()}
	}
	root, err := os.OpenRoot(req.Workdir)
	if err != nil {
		return wire.Done{Error: fmt.Sprintf("opening workspace: %v", err)}
	}
	defer root.Close()
	info, err := root.Lstat(req.Path)
	if err != nil {
		return wire.Done{Error: fmt.Sprintf("%s: no such file in the workspace", req.Path)}
	}
	if !info.Mode().IsRegular() {
		return wire.Done{Error: fmt.Sprintf("%s is not a regular file (%s); only regular files are read", req.Path, typeOf(info.Mode()))}
	}
	limit := req.MaxReadBytes
	if limit <= 0 {
		limit = 8 << 20
	}
	if info.Size() > limit {
		return wire.Done{Error: fmt.Sprintf("%s is %d bytes, over the read limit of %d", req.Path, info.Size(), limit)}
	}
	data, err := readRegular(root, req.Path, limit)
	if err != nil {
		return wire.Done{Error: fmt.Sprintf("%s: %v", req.Path, err)}
	}
	_ = w.json(wire.KindArtifact, 0, wire.Artifact{Path: req.Path, Size: int64(len(data)), Data: data, Type: "file"})
	return wire.Done{}
}

// listFiles sends an Artifact frame (without content) for every entry under
// the directory, not following symlinks, at most 10000.
func listFiles(w *frameWriter, req wire.Request) wire.Done {
	dir := "."
	if req.Path != "" && req.Path != "." {
		if err := wire.ValidPath(req.Path); err != nil {
			return wire.Done{Error: err.Error()}
		}
		dir = req.Path
	}
	root, err := os.OpenRoot(req.Workdir)
	if err != nil {
		return wire.Done{Error: fmt.Sprintf("opening workspace: %v", err)}
	}
	defer root.Close()
	const limit = 10000
	n := 0
	err = fs.WalkDir(root.FS(), dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." || p == dir && d.IsDir() {
			return nil
		}
		if p == wire.ForksDir && d.IsDir() {
			return fs.SkipDir // the workspaces of the session's forks are theirs
		}
		if n++; n > limit {
			return fmt.Errorf("more than %d entries; list a subdirectory", limit)
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		a := wire.Artifact{Path: path.Clean(p), Type: typeOf(info.Mode())}
		if info.Mode().IsRegular() {
			a.Size = info.Size()
		}
		return w.json(wire.KindArtifact, 0, a)
	})
	if err != nil {
		return wire.Done{Error: fmt.Sprintf("listing %s: %v", dir, err)}
	}
	return wire.Done{}
}

func typeOf(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "file"
	case m.IsDir():
		return "dir"
	case m&fs.ModeSymlink != 0:
		return "symlink"
	default:
		return "other"
	}
}

// writeFiles writes files under workdir through an os.Root, so that no path
// can escape it even through a symlink.
func writeFiles(workdir string, files []wire.File) error {
	if len(files) == 0 {
		return nil
	}
	root, release, err := openWorkspace(workdir)
	if err != nil {
		return fmt.Errorf("opening workspace: %w", err)
	}
	defer release()
	for _, f := range files {
		if err := wire.ValidPath(f.Path); err != nil {
			return err
		}
		if dir := path.Dir(f.Path); dir != "." {
			if err := root.MkdirAll(dir, 0o755); err != nil {
				return fmt.Errorf("creating directory for %s: %w", f.Path, err)
			}
		}
		mode := os.FileMode(f.Mode & 0o777)
		if mode == 0 {
			mode = 0o644
		}
		fh, err := root.OpenFile(f.Path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, mode)
		if err != nil {
			return fmt.Errorf("writing %s: %w", f.Path, err)
		}
		_, werr := fh.Write(f.Data)
		cerr := fh.Close()
		if err := errors.Join(werr, cerr); err != nil {
			return fmt.Errorf("writing %s: %w (is the workspace full?)", f.Path, err)
		}
	}
	return nil
}

// bootWorkspace is the sandbox's workspace, opened at boot by warmUp and
// kept open: each system call on a run's critical path counts.
var bootWorkspace struct {
	dir  string
	root *os.Root
}

// openWorkspace returns an os.Root for dir, the one opened at boot when it
// is that directory, and what to call when done with it.
func openWorkspace(dir string) (*os.Root, func(), error) {
	if r := bootWorkspace.root; r != nil && dir == bootWorkspace.dir {
		return r, func() {}, nil
	}
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, nil, err
	}
	return r, func() { _ = r.Close() }, nil
}
