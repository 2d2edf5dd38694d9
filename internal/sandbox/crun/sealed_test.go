//go:build linux

package crun

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestMain lets this test binary, run from a sealed copy of itself,
// answer what crun's is_self_cloned() asks of its /proc/self/exe.
func TestMain(m *testing.M) {
	if os.Getenv("MCR_TEST_REPORT_EXE_SEALS") == "1" {
		f, err := os.Open("/proc/self/exe")
		if err == nil {
			var seals int
			if seals, err = unix.FcntlInt(f.Fd(), unix.F_GET_SEALS, 0); err == nil {
				os.Stdout.WriteString(strconv.Itoa(seals))
				os.Exit(0)
			}
		}
		os.Stdout.WriteString(err.Error())
		os.Exit(1)
	}
	os.Exit(m.Run())
}

func TestABinaryRunFromItsSealedCopyHasExactlyTheSealsCrunTakesForItsOwnCopy(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s, err := sealBinary(self)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	cmd := exec.Command(self)
	cmd.Path = s.path
	cmd.Env = append(os.Environ(), "MCR_TEST_REPORT_EXE_SEALS=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("running the sealed copy at %s: %v: %s", s.path, err, out)
	}
	// crun's cloned_binary.c: is_cloned = (seals == RUNC_MEMFD_SEALS), those four.
	const crunAsks = unix.F_SEAL_SEAL | unix.F_SEAL_SHRINK | unix.F_SEAL_GROW | unix.F_SEAL_WRITE
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(crunAsks) {
		t.Fatalf("its /proc/self/exe has seals %s, want exactly %d (crun copies itself again otherwise)", got, crunAsks)
	}
}
