package languages

import (
	"strings"
	"testing"
)

// TestALanguageOnAnotherArchitectureSaysWhy: a language whose runtime
// exists only for some architectures (x86-64 assembly, Crystal) carries the
// reason, which the agent of a sandbox of another architecture answers
// before the first stage, instead of failing in the linker or on a missing
// compiler (the agent's side: agent's
// TestServeRefusesALanguageOfAnotherArchitectureBeforeItsFirstStage).
func TestALanguageOnAnotherArchitectureSaysWhy(t *testing.T) {
	for _, c := range []struct{ name, refusal string }{
		{"asm", "x86-64 Assembly (NASM) runs only in amd64 sandboxes: its programs are x86-64 machine code; use C or another language there"},
		{"crystal", "Crystal runs only in amd64 sandboxes: Debian packages its compiler for amd64 only; use Ruby or another language there"},
	} {
		t.Run(c.name, func(t *testing.T) {
			l, ok := Builtin().Lookup(c.name)
			if !ok || l.RunsOn("arm64") || !l.RunsOn("amd64") {
				t.Fatalf("%s: want a language that runs on amd64 only", c.name)
			}
			if got := l.ArchitectureRefusal(); got != c.refusal {
				t.Errorf("refusal %q, want %q", got, c.refusal)
			}
		})
	}
	for _, l := range Builtin().Languages() {
		if len(l.Architectures) == 0 && (l.ArchitectureRefusal() != "" || !l.RunsOn("amd64") || !l.RunsOn("arm64")) {
			t.Errorf("%s names no architectures but is refused somewhere: %q", l.Name, l.ArchitectureRefusal())
		}
	}
}

func TestArchitecturesAreValidated(t *testing.T) {
	base := func() Language {
		return Language{Name: "x", Image: "base", File: "main.x", Run: []string{"./a"}, Version: []string{"v"}}
	}
	cases := []struct {
		name  string
		edit  func(*Language)
		error string
	}{
		{"every architecture when none is named", func(*Language) {}, ""},
		{"a known architecture with its reason", func(l *Language) {
			l.Architectures, l.ArchitecturesReason = []string{"amd64"}, "its programs are amd64 code"
		}, ""},
		{"an unknown architecture is refused", func(l *Language) {
			l.Architectures, l.ArchitecturesReason = []string{"x86_64"}, "why"
		}, `unknown architecture "x86_64"`},
		{"architectures without a reason are refused", func(l *Language) { l.Architectures = []string{"amd64"} }, "architectures and architectures_reason go together"},
		{"a reason without architectures is refused", func(l *Language) { l.ArchitecturesReason = "why" }, "architectures and architectures_reason go together"},
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
