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

// TestALanguageOnAnotherArchitectureSaysWhy: a language whose runtime
// exists only for some architectures (x86-64 assembly, Crystal) checks the
// sandbox's machine in its compile step and says so, instead of failing in
// the linker or on a missing compiler. Each such step runs here with a uname
// that answers aarch64.
func TestALanguageOnAnotherArchitectureSaysWhy(t *testing.T) {
	var limited []Language
	for _, l := range Builtin().Languages() {
		if len(l.Architectures) > 0 {
			limited = append(limited, l)
		}
	}
	for _, want := range []string{"asm", "crystal"} {
		if l, ok := Builtin().Lookup(want); !ok || l.RunsOn("arm64") || !l.RunsOn("amd64") {
			t.Errorf("%s: want a language that runs on amd64 only", want)
		}
	}
	fake := t.TempDir()
	if err := os.WriteFile(filepath.Join(fake, "uname"), []byte("#!/bin/sh\necho aarch64\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, l := range limited {
		t.Run(l.Name, func(t *testing.T) {
			cmd := exec.Command(l.Compile[0], l.Compile[1:]...)
			cmd.Dir = t.TempDir()
			cmd.Env = []string{"PATH=" + fake + ":/usr/bin:/bin"}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			var exit *exec.ExitError
			if !errors.As(err, &exit) || exit.ExitCode() != 2 || !strings.Contains(stderr.String(), "runs only in amd64 sandboxes") || !strings.Contains(stderr.String(), "aarch64") {
				t.Fatalf("the compile step on aarch64: %v, stderr %q; want exit 2 naming the architecture", err, stderr.String())
			}
		})
	}
}

func TestArchitecturesAreValidated(t *testing.T) {
	base := func() Language {
		return Language{Name: "x", Image: "base", File: "main.x", Compile: []string{"cc"}, Run: []string{"./a"}, Version: []string{"v"}}
	}
	cases := []struct {
		name  string
		edit  func(*Language)
		error string
	}{
		{"every architecture when none is named", func(*Language) {}, ""},
		{"a known architecture", func(l *Language) { l.Architectures = []string{"amd64"} }, ""},
		{"an unknown architecture is refused", func(l *Language) { l.Architectures = []string{"x86_64"} }, `unknown architecture "x86_64"`},
		{"a limited language without a compile step is refused", func(l *Language) {
			l.Architectures = []string{"amd64"}
			l.Compile = nil
		}, "needs a compile command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l := base()
			c.edit(&l)
			_, err := New(File{Images: []Image{{Name: "base", Tag: "b:1", From: "root"}}, Languages: []Language{l}})
			switch {
			case c.error == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case c.error != "" && (err == nil || !strings.Contains(err.Error(), c.error)):
				t.Fatalf("error %v, want one containing %q", err, c.error)
			}
		})
	}
}
