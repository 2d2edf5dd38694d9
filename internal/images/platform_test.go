package images

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
)

// TestTheImagesBuildForEveryArchitectureTheRegistryKnows: a language's
// "architectures" name the platforms the images build for, no more and no
// fewer.
func TestTheImagesBuildForEveryArchitectureTheRegistryKnows(t *testing.T) {
	var built []string
	for a := range archNames {
		built = append(built, a)
	}
	slices.Sort(built)
	if known := slices.Sorted(slices.Values(languages.KnownArchitectures)); !slices.Equal(built, known) {
		t.Errorf("the images build for %v, the registry knows %v", built, known)
	}
	if got := supportedPlatforms(); got != "linux/amd64, linux/arm64" {
		t.Errorf("supportedPlatforms() = %q", got)
	}
}

func TestDaemonArchitecturesAreNamedAsGoNamesThem(t *testing.T) {
	for _, tc := range []struct{ machine, want string }{
		{"x86_64", "amd64"},      // Docker on Intel and AMD
		{"amd64", "amd64"},       // Podman
		{"aarch64", "arm64"},     // Docker on ARM, Docker Desktop on Apple Silicon
		{"arm64", "arm64"},       // Podman
		{"AARCH64", "arm64"},     // any case
		{"riscv64", "riscv64"},   // unknown names pass through
		{"ppc64le", "ppc64le"},   // and are refused by checkPlatform
		{"", ""},                 // a daemon that does not say
		{"x86-64", "amd64"},      // the ELF spelling
		{"armv7l", "armv7l"},     // 32-bit ARM is not built
		{"s390x", "s390x"},       // nor IBM Z
		{"i686", "i686"},         // nor 32-bit x86
		{"arm64/v8", "arm64/v8"}, // a platform string is no machine name
	} {
		if got := dockerengine.GoArch(tc.machine); got != tc.want {
			t.Errorf("dockerengine.GoArch(%q) = %q, want %q", tc.machine, got, tc.want)
		}
	}
}

func TestPlatformFlagAcceptsLinuxAmd64AndArm64InTheirUsualSpellings(t *testing.T) {
	for _, tc := range []struct{ in, arch string }{
		{"linux/arm64", "arm64"},
		{"linux/arm64/v8", "arm64"},
		{"linux/aarch64", "arm64"},
		{"linux/amd64", "amd64"},
		{"linux/x86_64", "amd64"},
		{" Linux/ARM64 ", "arm64"},
	} {
		p, err := ParsePlatform(tc.in)
		if err != nil {
			t.Errorf("ParsePlatform(%q): %v", tc.in, err)
			continue
		}
		if want := (ocispec.Platform{OS: "linux", Architecture: tc.arch}); p.OS != want.OS || p.Architecture != want.Architecture || p.Variant != "" {
			t.Errorf("ParsePlatform(%q) = %+v, want %+v", tc.in, p, want)
		}
	}
}

func TestPlatformFlagRefusesWhatTheImagesDoNotBuildForAndNamesWhatTheyDo(t *testing.T) {
	for _, tc := range []struct{ in, mentions string }{
		{"arm64", "want OS/ARCHITECTURE"},
		{"", "want OS/ARCHITECTURE"},
		{"linux/", "want OS/ARCHITECTURE"},
		{"linux/arm64/v8/x", "want OS/ARCHITECTURE"},
		{"linux/arm/v7", `variant "v7"`},
		{"linux/amd64/v3", `variant "v3"`},
		{"linux/riscv64", "not linux/riscv64"},
		{"windows/amd64", "not windows/amd64"},
		{"darwin/arm64", "not darwin/arm64"},
	} {
		_, err := ParsePlatform(tc.in)
		if err == nil {
			t.Errorf("ParsePlatform(%q) accepted it", tc.in)
			continue
		}
		if !strings.Contains(err.Error(), tc.mentions) || !strings.Contains(err.Error(), "linux/amd64, linux/arm64") {
			t.Errorf("ParsePlatform(%q) = %q, want it to say %q and name linux/amd64, linux/arm64", tc.in, err, tc.mentions)
		}
	}
}

func TestDebootstrapTakesTheDebianArchitectureOfEachPlatform(t *testing.T) {
	for _, tc := range []struct{ platform, debian, binfmt string }{
		{"linux/amd64", "amd64", "qemu-x86_64"},
		{"linux/arm64", "arm64", "qemu-aarch64"},
		{"linux/aarch64", "arm64", "qemu-aarch64"},
	} {
		p, err := ParsePlatform(tc.platform)
		if err != nil {
			t.Fatal(err)
		}
		if got := archNames[p.Architecture]; got.debian != tc.debian || got.binfmt != tc.binfmt {
			t.Errorf("%s: debootstrap --arch %q with handler %q, want %q with %q", tc.platform, got.debian, got.binfmt, tc.debian, tc.binfmt)
		}
	}
}

// The binfmt_misc entries as the kernel shows them for Debian's
// qemu-user-static 7.2 (flags OPF) and for a handler registered by hand
// without the F flag.
const (
	binfmtAarch64 = "enabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\noffset 0\nmagic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n"
	binfmtNoFix   = "enabled\ninterpreter /usr/bin/qemu-aarch64-static\nflags: \noffset 0\nmagic 7f454c460201010000000000000000000200b700\nmask ffffffffffffff00fffffffffffffffffeffffff\n"
	binfmtOff     = "disabled\ninterpreter /usr/libexec/qemu-binfmt/aarch64-binfmt-P\nflags: POF\noffset 0\n"
)

func TestBootstrappingAnotherArchitectureNeedsAQemuHandlerAndSaysHowToGetOne(t *testing.T) {
	for _, tc := range []struct {
		name           string
		host, target   string
		handlers       map[string]string // file in binfmt_misc -> content
		wantOK         bool
		wantMentioning []string
	}{
		{name: "the host's own architecture needs nothing", host: "amd64", target: "amd64", wantOK: true},
		{name: "arm64 on an arm64 host needs nothing", host: "arm64", target: "arm64", wantOK: true},
		{name: "arm64 on amd64 with Debian's handler", host: "amd64", target: "arm64",
			handlers: map[string]string{"qemu-aarch64": binfmtAarch64}, wantOK: true},
		{name: "amd64 on arm64 with a handler", host: "arm64", target: "amd64",
			handlers: map[string]string{"qemu-x86_64": strings.ReplaceAll(binfmtAarch64, "aarch64", "x86_64")}, wantOK: true},
		{name: "arm64 on amd64 without a handler", host: "amd64", target: "arm64",
			handlers: map[string]string{"qemu-arm": binfmtAarch64},
			wantMentioning: []string{"linux/arm64 on this linux/amd64 machine", "qemu-aarch64", "there is none",
				"apt-get install -y qemu-user-static binfmt-support", "cat /usr/lib/binfmt.d/qemu-aarch64.conf > ", "/register", "mount -t binfmt_misc"}},
		{name: "amd64 on arm64 without a handler", host: "aarch64", target: "amd64",
			wantMentioning: []string{"linux/amd64 on this linux/arm64 machine", "qemu-x86_64", "apt-get install -y qemu-user-static binfmt-support"}},
		{name: "a disabled handler", host: "amd64", target: "arm64",
			handlers:       map[string]string{"qemu-aarch64": binfmtOff},
			wantMentioning: []string{"it is disabled", "echo 1 > "}},
		{name: "a handler without the F flag, which the chroot cannot use", host: "amd64", target: "arm64",
			handlers:       map[string]string{"qemu-aarch64": binfmtNoFix},
			wantMentioning: []string{"with the F flag", "echo -1 > ", "cat /usr/lib/binfmt.d/qemu-aarch64.conf > "}},
		{name: "an architecture the images do not build for", host: "amd64", target: "riscv64",
			wantMentioning: []string{"linux/amd64, linux/arm64", "not linux/riscv64"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range tc.handlers {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			err := checkEmulation(dir, tc.host, tc.target)
			if tc.wantOK {
				if err != nil {
					t.Fatalf("checkEmulation: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("checkEmulation accepted it")
			}
			for _, m := range tc.wantMentioning {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("the error does not say %q:\n%s", m, err)
				}
			}
		})
	}
}

func TestABuildThatCannotRunTheTargetsProgramsNamesTheEmulator(t *testing.T) {
	arm64 := ocispec.Platform{OS: "linux", Architecture: "arm64"}
	for _, tc := range []struct {
		name     string
		err      error
		wantHint bool
	}{
		{"no error", nil, false},
		{"another failure", errors.New("The command '/bin/sh -c apt-get update' returned a non-zero code: 100"), false},
		{"exec format error", errors.New(`failed to create shim task: OCI runtime create failed: runc create failed: unable to start container process: exec: "/bin/sh": exec format error`), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := execFormatHint(tc.err, arm64)
			if tc.err == nil {
				if got != nil {
					t.Fatalf("execFormatHint(nil) = %v", got)
				}
				return
			}
			if !errors.Is(got, tc.err) {
				t.Errorf("the hint loses the error: %v", got)
			}
			if hinted := strings.Contains(got.Error(), "qemu-user-static and binfmt-support"); hinted != tc.wantHint {
				t.Errorf("hinted %v, want %v: %v", hinted, tc.wantHint, got)
			}
		})
	}
}

func TestTheRootArchiveNamesThePlatformItWasBootstrappedFor(t *testing.T) {
	created := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, platform := range []string{"linux/amd64", "linux/arm64"} {
		t.Run(platform, func(t *testing.T) {
			p, err := ParsePlatform(platform)
			if err != nil {
				t.Fatal(err)
			}
			layer := []byte("the root file system, archived")
			sum := sha256.Sum256(layer)
			diffID := "sha256:" + hex.EncodeToString(sum[:])
			config, manifest, err := rootArchiveMetadata(RootTag, p, diffID, "debootstrap --variant=minbase --arch "+p.Architecture, created)
			if err != nil {
				t.Fatal(err)
			}
			var archive bytes.Buffer
			if err := writeRootArchive(&archive, bytes.NewReader(layer), int64(len(layer)), config, manifest); err != nil {
				t.Fatal(err)
			}
			files := map[string][]byte{}
			tr := tar.NewReader(&archive)
			for {
				hdr, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				files[hdr.Name], _ = io.ReadAll(tr)
			}
			if !bytes.Equal(files["layer.tar"], layer) {
				t.Errorf("layer.tar = %q, want %q", files["layer.tar"], layer)
			}
			var cfg struct {
				Architecture, OS string
				Config           struct{ Env, Cmd []string }
				RootFS           struct {
					DiffIDs []string `json:"diff_ids"`
				} `json:"rootfs"`
			}
			if err := json.Unmarshal(files["config.json"], &cfg); err != nil {
				t.Fatal(err)
			}
			if cfg.OS != "linux" || cfg.Architecture != p.Architecture {
				t.Errorf("the configuration says %s/%s, want %s", cfg.OS, cfg.Architecture, platform)
			}
			if len(cfg.RootFS.DiffIDs) != 1 || cfg.RootFS.DiffIDs[0] != diffID {
				t.Errorf("diff_ids = %v, want [%s]", cfg.RootFS.DiffIDs, diffID)
			}
			if !slices.Equal(cfg.Config.Env, []string{"PATH=" + rootPath}) || !slices.Equal(cfg.Config.Cmd, []string{"bash"}) {
				t.Errorf("Env %v and Cmd %v, want PATH and bash as in Debian's images", cfg.Config.Env, cfg.Config.Cmd)
			}
			var man []struct{ Config, RepoTags, Layers any }
			if err := json.Unmarshal(files["manifest.json"], &man); err != nil {
				t.Fatal(err)
			}
			if len(man) != 1 || man[0].Config != "config.json" || fmt.Sprint(man[0].RepoTags) != "["+RootTag+"]" || fmt.Sprint(man[0].Layers) != "[layer.tar]" {
				t.Errorf("manifest.json = %s", files["manifest.json"])
			}
		})
	}
}
