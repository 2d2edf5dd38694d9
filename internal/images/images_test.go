package images

import (
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

func TestPickMirror(t *testing.T) {
	const debianSources = `Types: deb
# http://snapshot.debian.org/archive/debian/20250520T000000Z
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: http://deb.debian.org/debian-security
Suites: bookworm-security
Components: main
`
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"deb822", map[string]string{"/etc/apt/sources.list.d/debian.sources": debianSources}, "http://deb.debian.org/debian"},
		{"deb822 security first", map[string]string{"/etc/apt/sources.list.d/debian.sources": `Types: deb
URIs: http://security.debian.org/debian-security
Suites: trixie-security
Components: main

Types: deb deb-src
URIs: https://mirror.example.org/pub/debian/
Suites: trixie
Components: main
`}, "https://mirror.example.org/pub/debian"},
		{"deb822 disabled and deb-src only", map[string]string{"/etc/apt/sources.list.d/debian.sources": `Types: deb
URIs: http://disabled.example/debian
Suites: trixie
Enabled: no

Types: deb-src
URIs: http://src.example/debian
Suites: trixie
`}, ""},
		{"one-line with options", map[string]string{"/etc/apt/sources.list": `# comment
deb-src http://src.example/debian bookworm main
deb http://security.debian.org/ bookworm-security main
deb [arch=amd64 signed-by=/usr/share/keyrings/x.gpg] http://ftp.de.debian.org/debian bookworm main contrib
`}, "http://ftp.de.debian.org/debian"},
		{"one-line security path", map[string]string{"/etc/apt/sources.list": "deb http://deb.debian.org/debian-security bookworm-security main\n"}, ""},
		{"sources.list before sources.list.d", map[string]string{
			"/etc/apt/sources.list":                  "deb http://first.example/debian bookworm main\n",
			"/etc/apt/sources.list.d/debian.sources": debianSources,
		}, "http://first.example/debian"},
		{"third-party repositories only", map[string]string{
			"/etc/apt/sources.list.d/google.list":        "deb https://packages.cloud.google.com/apt cloud-sdk-bookworm main\n",
			"/etc/apt/sources.list.d/nodesource.sources": "Types: deb\nURIs: https://deb.nodesource.com/node_20.x\nSuites: nodistro\n",
		}, ""},
		{"ubuntu", map[string]string{"/etc/apt/sources.list": "deb http://archive.ubuntu.com/ubuntu noble main\n"}, ""},
		{"snapshot", map[string]string{"/etc/apt/sources.list": "deb [check-valid-until=no] http://snapshot.debian.org/archive/debian/20250520T000000Z bookworm main\n"}, "http://snapshot.debian.org/archive/debian/20250520T000000Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := pickMirror(tt.files); got != tt.want {
				t.Errorf("pickMirror() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParsePreinstalled(t *testing.T) {
	tests := []struct {
		name    string
		out     string
		want    map[string]string
		wantErr string
	}{
		{"name and version lines", "numpy 2.2.4\nscikit-learn 1.4.2\n", map[string]string{"numpy": "2.2.4", "scikit-learn": "1.4.2"}, ""},
		{"blank lines and spaces ignored", "\n  PyYAML 6.0.2  \n\n", map[string]string{"PyYAML": "6.0.2"}, ""},
		{"a line without a version", "numpy\n", nil, `want "name version"`},
		{"a line with more than two fields", "numpy 2.2.4 extra\n", nil, `want "name version"`},
		{"nothing listed", "\n", nil, "no packages listed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParsePreinstalled(tc.out)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestResolveLeavesOptionalVariantsOutUnlessAskedOrUsed(t *testing.T) {
	builtin := languages.Builtin()
	withML, err := languages.Load(filepath.Join("..", "..", "deploy", "languages", "python-ml.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		reg    *languages.Registry
		names  []string
		wantML bool
	}{
		{"every image (make images) leaves python-ml out", builtin, nil, false},
		{"python-ml named is built", builtin, []string{"python-ml"}, true},
		{"the python language resolves to the python image", builtin, []string{"python"}, false},
		{"every image includes python-ml once python runs in it", withML, nil, true},
		{"the python language resolves to python-ml once it runs there", withML, []string{"py"}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.reg, tc.names)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(got, "python-ml") != tc.wantML {
				t.Errorf("Resolve(%v) = %v; python-ml included: want %v", tc.names, got, tc.wantML)
			}
		})
	}
}

func TestOnDemandImagesAreBuiltByAllOrWhenNamedNotByDefault(t *testing.T) {
	reg := languages.Builtin()
	tests := []struct {
		name         string
		names        []string
		wantDialects bool
	}{
		{"no names (make images, make run) leaves dialects out", nil, false},
		{"a language of the image builds it", []string{"racket"}, true},
		{"an alias of one of its languages builds it", []string{"matlab"}, true},
		{"the image named builds it", []string{"dialects"}, true},
		{"--all builds it", All(reg), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(reg, tc.names)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(got, "dialects") != tc.wantDialects {
				t.Errorf("Resolve(%v) = %v; dialects included: want %v", tc.names, got, tc.wantDialects)
			}
		})
	}
	all := All(reg)
	if slices.Contains(all, "python-ml") {
		t.Errorf("All = %v: python-ml is built only when named", all)
	}
	defaults, _ := Resolve(reg, nil)
	for _, name := range defaults {
		if !slices.Contains(all, name) {
			t.Errorf("All = %v lacks the default image %s", all, name)
		}
	}
}

func TestAMeasuringCommandGetsTheLanguagesMemoryAndMoreUnderEmulation(t *testing.T) {
	small := languages.Language{Name: "small"}
	large := languages.Language{Name: "large", Limits: languages.Limits{MemoryMB: 1024}}
	for _, tc := range []struct {
		name        string
		l           languages.Language
		emulated    bool
		wantMemory  int64
		wantTimeout time.Duration
	}{
		{"a language without a limit of its own gets 512 MB", small, false, 512 << 20, 2 * time.Minute},
		{"a language whose own limit is larger gets its own", large, false, 1024 << 20, 2 * time.Minute},
		{"under emulation a language gets four times the memory and five times the time", small, true, 2048 << 20, 10 * time.Minute},
		{"under emulation a large language gets four times its own", large, true, 4096 << 20, 10 * time.Minute},
	} {
		t.Run(tc.name, func(t *testing.T) {
			memory, timeout := probe{emulated: tc.emulated}.limits(tc.l)
			if memory != tc.wantMemory || timeout != tc.wantTimeout {
				t.Errorf("limits: %d MB, %s; want %d MB, %s", memory>>20, timeout, tc.wantMemory>>20, tc.wantTimeout)
			}
		})
	}
	// The registry's largest runtime is the one measured under qemu-user:
	// `ghc --version` peaks at 1.65 GB there.
	haskell, _ := languages.Builtin().Lookup("haskell")
	if memory, _ := (probe{emulated: true}).limits(haskell); memory < 1700<<20 {
		t.Errorf("Haskell's version step under emulation gets %d MB; ghc --version needs 1.65 GB under qemu-user", memory>>20)
	}
}
