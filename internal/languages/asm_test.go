package languages

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAssemblyOnAnotherArchitectureSaysWhy: x86-64 assembly cannot be
// linked or run on an arm64 daemon's sandboxes, so its compile step checks
// the machine first and says so, instead of failing in the linker. The step
// runs here with a uname that answers aarch64.
func TestAssemblyOnAnotherArchitectureSaysWhy(t *testing.T) {
	asm, ok := Builtin().Lookup("asm")
	if !ok || len(asm.Compile) == 0 {
		t.Fatal("no x86-64 assembly with a compile step in the registry")
	}
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "uname"), []byte("#!/bin/sh\necho aarch64\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(asm.Compile[0], asm.Compile[1:]...)
	cmd.Dir = t.TempDir()
	cmd.Env = []string{"PATH=" + fake + ":/usr/bin:/bin"}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "runs only in amd64 sandboxes: this one is aarch64") {
		t.Fatalf("the compile step on aarch64: %v, stderr %q; want exit 2 naming the architecture", err, stderr.String())
	}
}
