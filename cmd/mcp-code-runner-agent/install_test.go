package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

func TestInstallCopiesTheRunningExecutableReadOnly(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "agent")
	if err := install(dest); err != nil {
		t.Fatal(err)
	}
	self, err := os.ReadFile("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(dest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, self) {
		t.Fatalf("installed %d bytes, want the %d bytes of the running executable", len(got), len(self))
	}
	fi, err := os.Stat(dest)
	if err != nil {
		t.Fatal(err)
	}
	if mode := fi.Mode().Perm(); mode != 0o555 {
		t.Fatalf("installed with mode %o, want 555", mode)
	}
}

func TestInstallRefusesToOverwrite(t *testing.T) {
	dest := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(dest, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := install(dest); err == nil {
		t.Fatal("install over an existing file succeeded; want an error")
	}
}
