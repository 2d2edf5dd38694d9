package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// fileState is what a scan remembers of a file to tell whether it changed.
type fileState struct {
	size  int64
	mtime time.Time
}

// errScanLimit stops a scan that examined too many entries.
var errScanLimit = errors.New("too many files in the workspace to examine")

// scan lists the regular files under dir without following symlinks,
// examining at most limit entries.
func scan(dir string, limit int) (map[string]fileState, error) {
	out := map[string]fileState{}
	seen := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil // unreadable entries are skipped, not fatal
		}
		if d.IsDir() && p == filepath.Join(dir, wire.ForksDir) {
			return fs.SkipDir // the workspaces of the session's forks are theirs
		}
		seen++
		if seen > limit {
			return errScanLimit
		}
		if !d.Type().IsRegular() {
			return nil // directories are walked, symlinks and devices ignored
		}
		info, err := d.Info()
		if err != nil {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		out[rel] = fileState{size: info.Size(), mtime: info.ModTime()}
		return nil
	})
	return out, err
}

// collect sends the files that are new or changed since before, within the
// limits, as Artifact frames. Files are opened through an os.Root and
// checked again to be regular, so a symlink swapped in after the scan cannot
// lead outside the workspace.
func collect(fw *frameWriter, dir string, before map[string]fileState, lim wire.ArtifactLimits) {
	after, err := scan(dir, lim.MaxScan)
	if err != nil {
		_ = fw.json(wire.KindArtifact, 0, wire.Artifact{Path: ".", Skipped: fmt.Sprintf("%v (more than %d entries); no files were collected", err, lim.MaxScan)})
		return
	}
	var paths []string
	for p, st := range after {
		if b, ok := before[p]; ok && b == st {
			continue
		}
		paths = append(paths, p)
	}
	sortStrings(paths)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	defer root.Close()
	var sent int
	var total int64
	for _, p := range paths {
		st := after[p]
		a := wire.Artifact{Path: p, Size: st.size}
		switch {
		case sent >= lim.MaxFiles:
			a.Skipped = fmt.Sprintf("more than %d changed files", lim.MaxFiles)
		case st.size > lim.MaxFileBytes:
			a.Skipped = fmt.Sprintf("larger than %d bytes", lim.MaxFileBytes)
		case total+st.size > lim.MaxTotalBytes:
			a.Skipped = fmt.Sprintf("files together exceed %d bytes", lim.MaxTotalBytes)
		default:
			data, err := readRegular(root, p, lim.MaxFileBytes)
			if err != nil {
				a.Skipped = err.Error()
				break
			}
			a.Data, a.Size = data, int64(len(data))
			total += a.Size
			sent++
		}
		if err := fw.json(wire.KindArtifact, 0, a); err != nil {
			return
		}
	}
}

func readRegular(root *os.Root, p string, limit int64) ([]byte, error) {
	info, err := root.Lstat(p)
	if err != nil {
		return nil, fmt.Errorf("vanished: %v", err)
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	f, err := root.OpenFile(p, os.O_RDONLY|syscallNoFollow, 0)
	if err != nil {
		return nil, fmt.Errorf("unreadable: %v", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("unreadable: %v", err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
