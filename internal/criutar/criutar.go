//go:build linux

// Package criutar is the tar that CRIU runs for a sandbox's tmpfs mounts.
// At a checkpoint CRIU saves each tmpfs it does not take as external
// (a sandbox's /workspace, /tmp, /dev/shm and /dev) by running
// `tar --create --gzip ...` inside the sandbox's user namespace, and at a
// restore puts it back with `tar --extract --gzip ...`: GNU tar, which
// starts gzip, two dynamically linked processes for each mount on each
// side, most of CRIU's time for those mounts. The agent binary, static
// and small, answers to the name tar (the crun backend puts a link named
// tar before the system's on CRIU's PATH) and does both jobs in one
// process: the same archive format (GNU tar, gzip), so that either tar
// reads what the other wrote.
//
// It does its own work only for CRIU's two exact command lines and for
// trees of directories, regular files, symbolic links, hard links and
// named pipes; any other command line, and a tree holding a sparse file
// or a device, goes to the system's tar, unchanged.
package criutar

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Name is the name CRIU runs tar by; the agent binary run by that name
// is this package's tar.
const Name = "tar"

// CRIU's command lines (criu/filesystems.c, tmpfs_dump and
// tmpfs_restore), the directory and, for create, "." after them.
var (
	createArgs  = []string{"--create", "--gzip", "--no-unquote", "--no-wildcards", "--one-file-system", "--check-links", "--preserve-permissions", "--sparse", "--numeric-owner", "--directory"}
	extractArgs = []string{"--extract", "--gzip", "--no-unquote", "--no-wildcards", "--directory"}
)

// errSystemTar says a tree holds what the system's tar archives and this
// one does not (a sparse file, a device).
var errSystemTar = errors.New("left to the system's tar")

// Main does tar's job for args (the command line without the program's
// name), reading stdin and writing stdout, and returns the exit status.
// A job that is not CRIU's, or a tree it leaves to the system's tar,
// replaces this process with the system's tar.
func Main(args []string) int {
	switch {
	case len(args) == len(createArgs)+2 && slices.Equal(args[:len(createArgs)], createArgs) && args[len(args)-1] == ".":
		err := create(args[len(createArgs)], os.Stdout, os.Stderr)
		if errors.Is(err, errSystemTar) {
			return systemTar(args)
		}
		return status(err)
	case len(args) == len(extractArgs)+1 && slices.Equal(args[:len(extractArgs)], extractArgs):
		return status(extract(args[len(extractArgs)], os.Stdin))
	}
	return systemTar(args)
}

func status(err error) int {
	if err != nil {
		fmt.Fprintln(os.Stderr, "tar:", err)
		return 2
	}
	return 0
}

// systemTar replaces this process with the first tar on PATH that is not
// this binary, given args.
func systemTar(args []string) int {
	self, err := os.Executable()
	if err == nil {
		self, err = filepath.EvalSymlinks(self)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tar: finding this executable:", err)
		return 2
	}
	for _, dir := range filepath.SplitList(os.Getenv("PATH")) {
		if dir == "" {
			continue
		}
		candidate := filepath.Join(dir, Name)
		resolved, err := filepath.EvalSymlinks(candidate)
		if err != nil || resolved == self {
			continue
		}
		if fi, err := os.Stat(resolved); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
			continue
		}
		err = syscall.Exec(candidate, append([]string{Name}, args...), os.Environ()) // the system's tar, with CRIU's own arguments
		fmt.Fprintf(os.Stderr, "tar: running %s: %v\n", candidate, err)
		return 2
	}
	fmt.Fprintln(os.Stderr, "tar: no other tar on PATH for this job")
	return 2
}

// member is one entry of the tree to archive.
type member struct {
	name string // as GNU tar names it: "./", "./dir/", "./dir/file"
	rel  string // the path from the tree's root: ".", "dir", "dir/file"
	st   unix.Stat_t
	link string // a hard link's first name, or a symbolic link's target
	typ  byte
}

// create writes the tree at dir, as GNU tar would with CRIU's create
// arguments, to out: a gzip-compressed archive in GNU format. It returns
// errSystemTar, having written nothing, for a tree it leaves to the
// system's tar.
func create(dir string, out, warn io.Writer) error {
	// dir is CRIU's /proc/self/fd/N, the mount's root: a magic link that
	// a walk would not follow, so the walk starts inside it, as GNU
	// tar's --directory does.
	if err := os.Chdir(dir); err != nil {
		return err
	}
	members, err := walk(warn)
	if err != nil {
		return err
	}
	gz, err := gzip.NewWriterLevel(out, gzip.BestSpeed)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(gz)
	for _, m := range members {
		hdr := &tar.Header{
			Typeflag: m.typ, Name: m.name, Linkname: m.link,
			Mode: int64(m.st.Mode & 0o7777), Uid: int(m.st.Uid), Gid: int(m.st.Gid),
			ModTime: time.Unix(m.st.Mtim.Sec, 0), Format: tar.FormatGNU,
		}
		if m.typ == tar.TypeReg {
			hdr.Size = m.st.Size
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
		if m.typ == tar.TypeReg {
			if err := copyFile(tw, m); err != nil {
				return err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	return gz.Close()
}

// walk lists the tree under the working directory, directories before
// what they hold, in lexical order, staying on the root's file system: a
// mount inside it is listed as its directory alone (GNU tar's
// --one-file-system). A socket is left out with a warning, as GNU tar
// does.
func walk(warn io.Writer) ([]member, error) {
	var root unix.Stat_t
	if err := unix.Lstat(".", &root); err != nil {
		return nil, fmt.Errorf(".: %w", err)
	}
	type inode struct{ dev, ino uint64 }
	firstName := map[inode]string{}
	var members []member
	var visit func(rel string) error
	visit = func(rel string) error {
		m := member{rel: rel}
		if err := unix.Lstat(rel, &m.st); err != nil {
			return fmt.Errorf("%s: %w", rel, err)
		}
		name := "./"
		if rel != "." {
			name = "./" + rel
		}
		m.name = name
		switch m.st.Mode & unix.S_IFMT {
		case unix.S_IFDIR:
			m.typ = tar.TypeDir
			if rel != "." {
				m.name += "/"
			}
			members = append(members, m)
			if m.st.Dev != root.Dev {
				return nil // another mount's root
			}
			entries, err := os.ReadDir(rel)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			for _, e := range entries { // sorted by name
				child := e.Name()
				if rel != "." {
					child = rel + "/" + child
				}
				if err := visit(child); err != nil {
					return err
				}
			}
			return nil
		case unix.S_IFREG:
			// A file with holes: the system's tar keeps them (--sparse);
			// written out whole, it could outgrow the mount it came from.
			if m.st.Size > m.st.Blocks*512 {
				return errSystemTar
			}
			m.typ = tar.TypeReg
			if m.st.Nlink > 1 {
				key := inode{m.st.Dev, m.st.Ino}
				if first, ok := firstName[key]; ok {
					m.typ, m.link = tar.TypeLink, first
				} else {
					firstName[key] = name
				}
			}
		case unix.S_IFLNK:
			target, err := os.Readlink(rel)
			if err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
			m.typ, m.link = tar.TypeSymlink, target
		case unix.S_IFIFO:
			m.typ = tar.TypeFifo
		case unix.S_IFSOCK:
			fmt.Fprintf(warn, "tar: %s: socket ignored\n", name)
			return nil
		default: // a device
			return errSystemTar
		}
		members = append(members, m)
		return nil
	}
	if err := visit("."); err != nil {
		return nil, err
	}
	return members, nil
}

// copyFile writes regular file m's content, which must still be the size
// its header says: the sandbox is frozen while CRIU dumps it.
func copyFile(w io.Writer, m member) error {
	f, err := os.OpenFile(m.rel, os.O_RDONLY|unix.O_NOFOLLOW, 0) // a file of the tree CRIU asked for
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	defer f.Close()
	n, err := io.Copy(w, io.LimitReader(f, m.st.Size))
	if err == nil && n != m.st.Size {
		err = fmt.Errorf("shrank from %d to %d bytes while being archived", m.st.Size, n)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", m.name, err)
	}
	return nil
}

// dirTimes is a directory's modification time, set after what it holds.
type dirTimes struct {
	rel   string
	mtime time.Time
}

// extract writes the gzip-compressed tar archive on in into dir, as GNU
// tar does run as root: owners, modes and modification times as the
// archive says. Nothing is written outside dir: every member's path is
// resolved beneath it without following a symbolic link, and a member
// named absolutely or with ".." is refused.
func extract(dir string, in io.Reader) error {
	rootFd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	defer unix.Close(rootFd)
	gz, err := gzip.NewReader(in)
	if err != nil {
		return fmt.Errorf("reading the archive: %w", err)
	}
	tr := tar.NewReader(gz)
	var dirs []dirTimes
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return fmt.Errorf("reading the archive: %w", err)
		}
		rel, err := memberPath(hdr.Name)
		if err != nil {
			return err
		}
		if hdr.Typeflag == tar.TypeGNUSparse { // GNU tar's, read back whole
			hdr.Typeflag = tar.TypeReg
		}
		if err := extractOne(rootFd, rel, hdr, tr); err != nil {
			return fmt.Errorf("%s: %w", hdr.Name, err)
		}
		if hdr.Typeflag == tar.TypeDir {
			dirs = append(dirs, dirTimes{rel, hdr.ModTime})
		}
	}
	// A directory's time last: what was made in it changed it.
	for _, d := range slices.Backward(dirs) {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(d.mtime.UnixNano())}
		parent, base, closeParent, err := openParent(rootFd, d.rel)
		if err != nil {
			return fmt.Errorf("%s: %w", d.rel, err)
		}
		err = unix.UtimesNanoAt(parent, base, ts, unix.AT_SYMLINK_NOFOLLOW)
		closeParent()
		if err != nil {
			return fmt.Errorf("%s: %w", d.rel, err)
		}
	}
	return nil
}

// memberPath is a member's path from the root ("." for the root itself),
// or an error for one that names a place outside it.
func memberPath(name string) (string, error) {
	if strings.HasPrefix(name, "/") {
		return "", fmt.Errorf("%s: an absolute member name", name)
	}
	for part := range strings.SplitSeq(name, "/") {
		if part == ".." {
			return "", fmt.Errorf("%s: a member name with a .. element", name)
		}
	}
	return path.Clean(name), nil
}

// openParent opens the directory that holds rel (beneath rootFd, through
// no symbolic link) and returns it with rel's last element; for the root
// itself it returns the root's own parent-relative form: rootFd and ".".
func openParent(rootFd int, rel string) (fd int, base string, closeFd func(), err error) {
	if rel == "." {
		return rootFd, ".", func() {}, nil
	}
	dir, base := path.Split(rel)
	if dir == "" {
		return rootFd, base, func() {}, nil
	}
	fd, err = unix.Openat2(rootFd, dir, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_DIRECTORY | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return -1, "", nil, err
	}
	return fd, base, func() { unix.Close(fd) }, nil
}

// extractOne makes member rel of hdr, with its content from r.
func extractOne(rootFd int, rel string, hdr *tar.Header, r io.Reader) error {
	parent, base, closeParent, err := openParent(rootFd, rel)
	if err != nil {
		return err
	}
	defer closeParent()
	mode := uint32(hdr.Mode & 0o7777)
	switch hdr.Typeflag {
	case tar.TypeDir:
		if rel != "." {
			if err := unix.Mkdirat(parent, base, 0o700); err != nil && err != unix.EEXIST {
				return err
			}
		}
		fd, err := unix.Openat(parent, base, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		if err := unix.Fchown(fd, hdr.Uid, hdr.Gid); err != nil {
			return err
		}
		return unix.Fchmod(fd, mode)
	case tar.TypeReg, tar.TypeChar, tar.TypeBlock, tar.TypeFifo, tar.TypeSymlink, tar.TypeLink:
	default:
		return fmt.Errorf("a member of type %q, which this tar does not extract", hdr.Typeflag)
	}
	// A name taken already (not in the fresh mount CRIU restores into)
	// is replaced, as GNU tar replaces it.
	err = makeNode(parent, base, rootFd, hdr)
	if err == unix.EEXIST {
		if err := unix.Unlinkat(parent, base, 0); err != nil {
			return err
		}
		err = makeNode(parent, base, rootFd, hdr)
	}
	if err != nil {
		return err
	}
	switch hdr.Typeflag {
	case tar.TypeReg:
		return writeContent(parent, base, mode, hdr, r)
	case tar.TypeLink:
		return nil // the file it names has its owner, mode and time
	}
	if err := unix.Fchownat(parent, base, hdr.Uid, hdr.Gid, unix.AT_SYMLINK_NOFOLLOW); err != nil {
		return err
	}
	if hdr.Typeflag != tar.TypeSymlink {
		// Made just now, by this process, in a mount only CRIU sees:
		// base is the node itself.
		if err := unix.Fchmodat(parent, base, mode, 0); err != nil {
			return err
		}
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return unix.UtimesNanoAt(parent, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}

// makeNode makes the file system node of a member that is not a
// directory (a regular file empty, its content written after).
func makeNode(parent int, base string, rootFd int, hdr *tar.Header) error {
	switch hdr.Typeflag {
	case tar.TypeReg:
		fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_CREAT|unix.O_EXCL|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0o600)
		if err == nil {
			unix.Close(fd)
		}
		return err
	case tar.TypeSymlink:
		return unix.Symlinkat(hdr.Linkname, parent, base)
	case tar.TypeLink:
		target, err := memberPath(hdr.Linkname)
		if err != nil {
			return err
		}
		tparent, tbase, closeT, err := openParent(rootFd, target)
		if err != nil {
			return err
		}
		defer closeT()
		return unix.Linkat(tparent, tbase, parent, base, 0)
	case tar.TypeFifo:
		return unix.Mknodat(parent, base, unix.S_IFIFO|0o600, 0)
	case tar.TypeChar:
		return unix.Mknodat(parent, base, unix.S_IFCHR|0o600, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	default: // tar.TypeBlock
		return unix.Mknodat(parent, base, unix.S_IFBLK|0o600, int(unix.Mkdev(uint32(hdr.Devmajor), uint32(hdr.Devminor))))
	}
}

// holeChunk is the size of the runs of zeros that writeContent leaves as
// holes: the archive of a sparse file (GNU tar's, from an older server)
// reads back with its holes as zeros, which, written, could outgrow the
// mount.
const holeChunk = 64 << 10

// writeContent writes a regular file's content from r into the file made
// at base, then its owner, mode and time.
func writeContent(parent int, base string, mode uint32, hdr *tar.Header, r io.Reader) error {
	fd, err := unix.Openat(parent, base, unix.O_WRONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return err
	}
	f := os.NewFile(uintptr(fd), base)
	defer f.Close()
	buf := make([]byte, holeChunk)
	zeros := make([]byte, holeChunk)
	var size int64
	for {
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			var werr error
			if bytes.Equal(buf[:n], zeros[:n]) {
				_, werr = f.Seek(int64(n), io.SeekCurrent)
			} else {
				_, werr = f.Write(buf[:n])
			}
			if werr != nil {
				return werr
			}
			size += int64(n)
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return rerr
		}
	}
	if size != hdr.Size {
		return fmt.Errorf("the archive ends %d bytes into a file of %d", size, hdr.Size)
	}
	if err := f.Truncate(size); err != nil { // a hole at the end
		return err
	}
	if err := f.Chown(hdr.Uid, hdr.Gid); err != nil {
		return err
	}
	// After the owner: a change of owner clears set-user-ID.
	if err := unix.Fchmod(fd, mode); err != nil {
		return err
	}
	ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, unix.NsecToTimespec(hdr.ModTime.UnixNano())}
	return unix.UtimesNanoAt(parent, base, ts, unix.AT_SYMLINK_NOFOLLOW)
}
