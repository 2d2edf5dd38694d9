//go:build linux

package crun

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// crun run from a sealed copy of itself, made once by the backend.
//
// crun copies its own binary into a memfd and executes that copy again
// at the start of every command, so that a container's process cannot
// reach and overwrite the binary on the host through /proc/self/exe
// (CVE-2019-5736): 1.1-2.2 ms of every `crun run`, `crun delete` and
// `crun restore` here, and a copy of the binary in memory for each. crun
// skips the copy when the binary it runs is a memfd with exactly the
// seals it would set itself (write, grow, shrink, and no more seals), as
// runc does for an administrator's sealed copy (runc's memfd-bind). The
// backend makes that copy once per binary and runs crun through the
// server's own descriptor of it (/proc/PID/fd/N), with argv[0] the
// binary's own name: `crun list` took 1.5 ms at the median this way
// against 2.9 ms from its file. The protection is the same; the copy is
// of the binary as it was when the server started, until its restart.

// crunMemfdSeals are the seals crun's is_self_cloned() asks for, exactly.
const crunMemfdSeals = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE

// sealedBinary is a sealed memfd copy of an executable: the path that
// executes it, and the descriptor that keeps it, which lives as long as
// the backend.
type sealedBinary struct {
	path string
	file *os.File
}

// sealBinary copies the executable at path into a memfd sealed as crun
// expects of a copy of itself.
func sealBinary(path string) (*sealedBinary, error) {
	src, err := os.Open(path) // the configured crun binary
	if err != nil {
		return nil, err
	}
	defer src.Close()
	fd, err := unix.MemfdCreate("crun", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	if err != nil {
		return nil, fmt.Errorf("memfd_create: %w", err)
	}
	mem := os.NewFile(uintptr(fd), "memfd:crun")
	if _, err := io.Copy(mem, src); err != nil {
		mem.Close()
		return nil, fmt.Errorf("copying %s: %w", path, err)
	}
	if _, err := unix.FcntlInt(mem.Fd(), unix.F_ADD_SEALS, crunMemfdSeals); err != nil {
		mem.Close()
		return nil, fmt.Errorf("sealing the copy of %s: %w", path, err)
	}
	return &sealedBinary{path: "/proc/" + strconv.Itoa(os.Getpid()) + "/fd/" + strconv.Itoa(int(mem.Fd())), file: mem}, nil
}

// close lets the copy go; commands started from it keep it until they end.
func (s *sealedBinary) close() error {
	if s == nil {
		return nil
	}
	return s.file.Close()
}

// sealAndTry seals the crun binary at path and runs `crun --version` from
// the copy, which fails where memfds may not be executed
// (vm.memfd_noexec).
func sealAndTry(path string) (*sealedBinary, error) {
	s, err := sealBinary(path)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, "--version") // the configured crun, from its copy
	cmd.Path = s.path
	if out, err := cmd.CombinedOutput(); err != nil {
		_ = s.close()
		return nil, fmt.Errorf("running crun from its sealed copy: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return s, nil
}
