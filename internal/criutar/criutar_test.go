//go:build linux

package criutar_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// CRIU's command lines, as criu/filesystems.c runs tar.
var (
	createArgs  = []string{"--create", "--gzip", "--no-unquote", "--no-wildcards", "--one-file-system", "--check-links", "--preserve-permissions", "--sparse", "--numeric-owner", "--directory"}
	extractArgs = []string{"--extract", "--gzip", "--no-unquote", "--no-wildcards", "--directory"}
)

// tars are the agent binary by the name tar (this package's tar) and the
// system's GNU tar.
type tars struct{ agent, gnu string }

func newTars(t *testing.T) tars {
	t.Helper()
	gnu, err := exec.LookPath("tar")
	if err != nil {
		testutil.SkipUnlessCI(t, "no system tar: %v", err)
	}
	link := filepath.Join(t.TempDir(), "tar")
	if err := os.Symlink(testutil.AgentBinary(t), link); err != nil {
		t.Fatal(err)
	}
	return tars{agent: link, gnu: gnu}
}

// run runs tar binary with args, stdin from the file in (if any), and
// returns its stdout and stderr.
func run(t *testing.T, binary, in string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	if in != "" {
		f, ferr := os.Open(in)
		if ferr != nil {
			t.Fatal(ferr)
		}
		defer f.Close()
		cmd.Stdin = f
	}
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.Bytes(), errOut.Bytes(), err
}

// archive makes an archive of dir with binary as CRIU does, into a file.
func archive(t *testing.T, binary, dir string) string {
	t.Helper()
	out, stderr, err := run(t, binary, "", append(slices.Clone(createArgs), dir, ".")...)
	if err != nil {
		t.Fatalf("%s --create of %s: %v: %s", binary, dir, err, stderr)
	}
	path := filepath.Join(t.TempDir(), "archive.tar.gz")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// unpack extracts archive into a new directory with binary as CRIU does.
func unpack(t *testing.T, binary, archive string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "extracted")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, stderr, err := run(t, binary, archive, append(slices.Clone(extractArgs), dir)...); err != nil {
		t.Fatalf("%s --extract of %s: %v: %s", binary, archive, err, stderr)
	}
	return dir
}

// root says whether the test may give files other owners.
func root() bool { return os.Geteuid() == 0 }

// makeTree fills dir with what a sandbox's tmpfs holds: directories,
// files (empty, small, with a long run of zeros, set-user-ID, with a long
// name), relative, absolute and long symbolic links, a hard link, a named
// pipe and a socket, with owners (as root) and modification times of
// their own.
func makeTree(t *testing.T, dir string) {
	t.Helper()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	p := func(rel string) string { return filepath.Join(dir, rel) }
	must(os.MkdirAll(p("a/b"), 0o755))
	must(os.Mkdir(p("sticky"), 0o755))
	must(os.WriteFile(p("empty"), nil, 0o644))
	must(os.WriteFile(p("a/small"), []byte("hello\n"), 0o644))
	big := make([]byte, 300<<10)
	_, _ = rand.Read(big[:100<<10])
	_, _ = rand.Read(big[228<<10:])
	must(os.WriteFile(p("a/b/big"), big, 0o644))
	must(os.WriteFile(p("setuid"), []byte("#!/bin/sh\n"), 0o755))
	long := "a/" + strings.Repeat("n", 120)
	must(os.WriteFile(p(long), []byte("long name\n"), 0o644))
	must(os.Symlink("a/small", p("rel")))
	must(os.Symlink("/nonexistent/target", p("abs")))
	must(os.Symlink(strings.Repeat("t/", 80), p("longlink")))
	must(os.Link(p("a/small"), p("a/hard")))
	must(unix.Mkfifo(p("fifo"), 0o640))
	l, err := net.Listen("unix", p("sock"))
	must(err)
	t.Cleanup(func() { l.Close() })
	if root() {
		must(os.Lchown(p("a/small"), 1000, 1000))
		must(os.Lchown(p("a/b"), 2000, 3000))
		must(os.Lchown(p("rel"), 4000, 4000))
		must(os.Lchown(p("fifo"), 5000, 5001))
	}
	// Modes after owners: a change of owner clears set-user-ID.
	must(os.Chmod(p("a/small"), 0o600))
	must(os.Chmod(p("a/b"), 0o700))
	must(os.Chmod(p("sticky"), 0o1777))
	must(os.Chmod(p("setuid"), 0o4755))
	base := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for i, rel := range []string{"empty", "a/small", "a/b/big", "setuid", long, "fifo", "a/b", "sticky", "a", "."} {
		at := base.Add(time.Duration(i) * time.Hour)
		must(os.Chtimes(p(rel), at, at))
	}
}

// describe is a tree as tar keeps it: each entry's path, type, mode,
// owner (as root), links, size, content's hash or link target, and
// modification time (but a symbolic link's); sockets are left out, as
// tar leaves them.
func describe(t *testing.T, dir string) []string {
	t.Helper()
	var lines []string
	err := filepath.Walk(dir, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode()&os.ModeSocket != 0 {
			return nil
		}
		line := fmt.Sprintf("%s %o", rel, st.Mode)
		if root() {
			line += fmt.Sprintf(" %d:%d", st.Uid, st.Gid)
		}
		switch {
		case fi.Mode().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			line += fmt.Sprintf(" links=%d size=%d sha256=%x", st.Nlink, st.Size, sha256.Sum256(data))
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(path)
			if err != nil {
				return err
			}
			lines = append(lines, line+" -> "+target)
			return nil
		}
		lines = append(lines, line+" mtime="+fi.ModTime().UTC().Format(time.RFC3339))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return lines
}

func sameTree(t *testing.T, what string, want, got []string) {
	t.Helper()
	if !slices.Equal(want, got) {
		t.Errorf("%s differs from the tree it came from:\nwant\n%s\ngot\n%s", what, strings.Join(want, "\n"), strings.Join(got, "\n"))
	}
}

func TestTheAgentsTarAndGNUTarReadEachOthersArchivesOfATree(t *testing.T) {
	tr := newTars(t)
	src := t.TempDir()
	makeTree(t, src)
	want := describe(t, src)

	ours := archive(t, tr.agent, src)
	gnus := archive(t, tr.gnu, src)
	sameTree(t, "the agent's archive extracted by GNU tar", want, describe(t, unpack(t, tr.gnu, ours)))
	sameTree(t, "GNU tar's archive extracted by the agent's tar", want, describe(t, unpack(t, tr.agent, gnus)))
	sameTree(t, "the agent's archive extracted by the agent's tar", want, describe(t, unpack(t, tr.agent, ours)))

	if got, want := members(t, ours), members(t, gnus); !slices.Equal(got, want) {
		t.Errorf("the agent's archive holds %v, GNU tar's %v", got, want)
	}
}

func TestTheAgentsTarWarnsOfASocketAndLeavesItOutAsGNUTarDoes(t *testing.T) {
	tr := newTars(t)
	src := t.TempDir()
	l, err := net.Listen("unix", filepath.Join(src, "sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, stderr, err := run(t, tr.agent, "", append(slices.Clone(createArgs), src, ".")...)
	if err != nil || !strings.Contains(string(stderr), "./sock: socket ignored") {
		t.Fatalf("the agent's tar of a tree with a socket: %v, %q; want success and a warning", err, stderr)
	}
}

// members lists an archive's member names, as written.
func members(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	r := tar.NewReader(gz)
	var names []string
	for {
		hdr, err := r.Next()
		if err != nil {
			break
		}
		names = append(names, hdr.Name)
	}
	slices.Sort(names)
	return names
}

func TestAMountInsideTheTreeIsArchivedAsItsDirectoryAlone(t *testing.T) {
	if !root() {
		testutil.SkipUnlessCI(t, "mounting needs root")
	}
	tr := newTars(t)
	src := t.TempDir()
	inner := filepath.Join(src, "inner")
	if err := os.Mkdir(inner, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", inner, "tmpfs", 0, "size=1m,mode=0750"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Unmount(inner, unix.MNT_DETACH) })
	if err := os.WriteFile(filepath.Join(inner, "hidden"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "kept"), []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	ours, gnus := members(t, archive(t, tr.agent, src)), members(t, archive(t, tr.gnu, src))
	if want := []string{"./", "./inner/", "./kept"}; !slices.Equal(ours, want) || !slices.Equal(gnus, want) {
		t.Fatalf("the agent's archive holds %v and GNU tar's %v; want %v", ours, gnus, want)
	}
}

func TestASparseFileIsLeftToGNUTarAndComesBackWithItsHoles(t *testing.T) {
	tr := newTars(t)
	src := t.TempDir()
	f, err := os.Create(filepath.Join(src, "sparse"))
	if err != nil {
		t.Fatal(err)
	}
	const size = 1 << 30
	if _, err := f.WriteAt([]byte("data in the middle"), size/2); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()
	path := archive(t, tr.agent, src)
	if fi, err := os.Stat(path); err != nil || fi.Size() > 1<<20 {
		t.Fatalf("the archive of a 1 GiB sparse file: %v, %v; want GNU tar's, a few kilobytes", fi, err)
	}
	out := unpack(t, tr.agent, path)
	var st unix.Stat_t
	if err := unix.Stat(filepath.Join(out, "sparse"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Size != size || st.Blocks*512 > 1<<20 {
		t.Fatalf("extracted: %d bytes in %d blocks; want %d bytes, nearly all holes", st.Size, st.Blocks, size)
	}
	got := make([]byte, 18)
	if g, err := os.Open(filepath.Join(out, "sparse")); err == nil {
		_, err = g.ReadAt(got, size/2)
		g.Close()
		if err != nil || string(got) != "data in the middle" {
			t.Fatalf("extracted content at the middle: %q, %v", got, err)
		}
	}
}

// craft writes a gzip-compressed tar archive of hdrs (a regular file's
// content is its name).
func craft(t *testing.T, hdrs ...tar.Header) string {
	t.Helper()
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	w := tar.NewWriter(gz)
	for _, h := range hdrs {
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(h.Name))
		}
		if err := w.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			_, _ = w.Write([]byte(h.Name))
		}
	}
	_ = w.Close()
	_ = gz.Close()
	path := filepath.Join(t.TempDir(), "crafted.tar.gz")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTheAgentsTarWritesNothingOutsideItsDirectory(t *testing.T) {
	tr := newTars(t)
	outside := t.TempDir()
	reg := func(name string) tar.Header { return tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o644} }
	for name, hdrs := range map[string][]tar.Header{
		"a member named with ..":             {reg("../" + filepath.Base(outside) + "/escaped")},
		"an absolute member":                 {reg(filepath.Join(outside, "escaped"))},
		"a member through a symbolic link":   {{Typeflag: tar.TypeSymlink, Name: "l", Linkname: outside}, reg("l/escaped")},
		"a hard link to a file outside":      {{Typeflag: tar.TypeLink, Name: "h", Linkname: "../x"}},
		"a hard link through a symbolic one": {{Typeflag: tar.TypeSymlink, Name: "l", Linkname: outside}, {Typeflag: tar.TypeLink, Name: "h", Linkname: "l/x"}},
	} {
		t.Run(name, func(t *testing.T) {
			if err := os.WriteFile(filepath.Join(outside, "x"), []byte("x"), 0o644); err != nil {
				t.Fatal(err)
			}
			into := t.TempDir()
			_, stderr, err := run(t, tr.agent, craft(t, hdrs...), append(slices.Clone(extractArgs), into)...)
			if err == nil {
				t.Errorf("extracting %s succeeded; want exit 2 and why", name)
			}
			if !strings.HasPrefix(string(stderr), "tar: ") {
				t.Errorf("stderr %q; want tar's complaint", stderr)
			}
			if entries, _ := os.ReadDir(outside); len(entries) != 1 {
				t.Errorf("the directory outside holds %d entries after the extraction; want its own file alone", len(entries))
			}
		})
	}
}

func TestOtherCommandLinesGoToTheSystemTar(t *testing.T) {
	tr := newTars(t)
	out, stderr, err := run(t, tr.agent, "", "--version")
	if err != nil || !strings.Contains(string(out), "GNU tar") {
		t.Fatalf("tar --version through the agent: %v, %q, %q; want GNU tar's version", err, out, stderr)
	}
}
