// Package packages is the host's cache of packages installed for runs and
// sessions: where it lives ([CacheDir]), what a request may ask for
// ([Check]), an entry's record of what it holds ([Installation], its
// manifest), and how a sandbox sees an entry ([Path], [Env]). The engine
// fills entries, running the language's package manager in a sandbox of
// its own (engine.Engine.Install); sessions copy them into their sandboxes.
package packages

import (
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/fault"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Path is where a sandbox sees the packages installed for it,
// read-only: each package manager's directory
// ([languages.PackageManager.Dir]) in it.
const Path = "/opt/mcp-code-runner/packages"

// ManifestName is the server's record of an install, in its cache entry.
const ManifestName = "mcr-manifest.json"

// Installation is a set of packages installed in the host cache.
type Installation struct {
	// Dir is the cache entry on the host.
	Dir string
	// Installed lists what the install put in place.
	Installed []InstalledPackage
	// Cached is set when the entry was there already: nothing was
	// downloaded.
	Cached bool
	// Network is what the installer did through its proxy (none when
	// cached).
	Network *egress.Report
	// Manager is the package manager that installed them.
	Manager languages.PackageManager
}

// Mount is the read-only mount of the installation in a sandbox.
func (in *Installation) Mount() sandbox.Mount {
	return sandbox.Mount{Source: in.Dir, Target: Path}
}

// Env is what makes the installed packages importable by the program.
func (in *Installation) Env() []string { return Env(in.Manager) }

// Env is what makes the packages that m installed importable by a
// sandbox's programs, with the installation at [Path].
func Env(m languages.PackageManager) []string {
	env := make([]string, len(m.Env))
	for i, kv := range m.Env {
		env[i] = strings.ReplaceAll(kv, "{dir}", path.Join(Path, m.Dir))
	}
	return env
}

// InstalledPackage is a package an install put in place.
type InstalledPackage struct {
	Name    string `json:"name" jsonschema:"the package's name"`
	Version string `json:"version" jsonschema:"the version installed"`
}

// CacheDir is the host directory of installed packages: the daemon must
// see it at the same path, so a server with a shared directory keeps it
// there.
func CacheDir(cfg config.Config) (string, error) {
	dir := cfg.Packages.CacheDir
	if dir == "" && cfg.SharedDir != "" {
		dir = filepath.Join(cfg.SharedDir, "packages")
	}
	if dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return "", fmt.Errorf("no directory for the package cache: %w; set packages.cache_dir", err)
		}
		dir = filepath.Join(base, "mcp-code-runner", "packages")
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("making the package cache %s: %w; set packages.cache_dir to a writable directory", dir, err)
	}
	// The entries inside are open to every uid (the installer opens them);
	// this directory is what keeps other users of the host out of them.
	// Sandboxes get their entries by bind mounts, which it does not close.
	if err := os.Chmod(dir, 0o700); err != nil {
		return "", fmt.Errorf("closing the package cache %s to other users: %w; set packages.cache_dir to a directory of this user's own", dir, err)
	}
	return dir, nil
}

// packageSpec is what a package argument may look like: a name with an
// optional version or range, for pip or npm; never an option (a leading
// "-"), a path or a URL.
var packageSpec = regexp.MustCompile(`^[A-Za-z0-9@_][A-Za-z0-9@/._\-=<>!~^*,+\[\] ]{0,199}$`)

// Check validates the packages a request asks for lang, against the
// operator's cfg and the registry's package managers.
func Check(cfg config.Config, reg *languages.Registry, lang languages.Language, specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	m, ok := reg.PackageManager(lang)
	if !ok {
		return fault.Invalid("%s takes no packages here; packages are installed for %s", lang.Name, strings.Join(languagesWithPackages(reg), ", "))
	}
	if _, ok := cfg.Packages.RegistryURL(m.RegistrySetting); !ok {
		return &fault.Error{Code: fault.CodeInternal, Message: fmt.Sprintf("the package manager %s of the language registry installs from packages.%s, which is no setting of this server; the operator's languages file must name one of %s", m.Name, m.RegistrySetting, strings.Join(cfg.Packages.RegistrySettings(), ", "))}
	}
	if egress.Rank(cfg.Network.MaxTier) < egress.Rank(egress.TierPackages) {
		return fault.Invalid("installing packages needs network access to the package registry, and this server allows network %q only; ask the operator to set network.max_tier to packages", cfg.Network.MaxTier)
	}
	if n := len(specs); n > cfg.Packages.MaxPackages {
		return fault.Invalid("%d packages asked for, the limit is %d", n, cfg.Packages.MaxPackages)
	}
	for _, s := range specs {
		if !packageSpec.MatchString(s) || strings.Contains(s, "://") || strings.Contains(s, "..") {
			return fault.Invalid("package %q is not a package name with an optional version, like requests==2.32.3 or lodash@4 (no options, paths or URLs)", s)
		}
	}
	return nil
}

func languagesWithPackages(reg *languages.Registry) []string {
	var out []string
	for _, l := range reg.Languages() {
		if l.Packages != "" {
			out = append(out, l.Name)
		}
	}
	return out
}

// ReadManifest reads the record of the installation in the cache entry
// dir, which m made; an error when it has none (an entry not finished).
func ReadManifest(dir string, m languages.PackageManager) (*Installation, error) {
	data, err := os.ReadFile(filepath.Join(dir, ManifestName))
	if err != nil {
		return nil, err
	}
	in := &Installation{Dir: dir, Manager: m}
	if err := json.Unmarshal(data, &in.Installed); err != nil {
		return nil, err
	}
	return in, nil
}

// ReadInstalled lists what an install put in dir, as the manager's listing
// ([languages.PackageManager.Listing]) says to read it, reading the files
// the installer wrote through an os.Root (no link leads out of dir) and
// bounded in size.
func ReadInstalled(dir, listing string) ([]InstalledPackage, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	readJSON := func(name string, v any) error {
		f, err := root.Open(name)
		if err != nil {
			return err
		}
		defer f.Close()
		return json.NewDecoder(io.LimitReader(f, 8<<20)).Decode(v)
	}
	var out []InstalledPackage
	if listing == "pip_report" {
		var report struct {
			Install []struct {
				Metadata struct {
					Name    string `json:"name"`
					Version string `json:"version"`
				} `json:"metadata"`
			} `json:"install"`
		}
		if err := readJSON("pip-report.json", &report); err != nil {
			return nil, err
		}
		for _, i := range report.Install {
			out = append(out, InstalledPackage{Name: i.Metadata.Name, Version: i.Metadata.Version})
		}
	} else {
		// Every package npm placed at the top of node_modules: what was
		// asked for and its hoisted dependencies.
		err := fs.WalkDir(root.FS(), "node_modules", func(p string, d fs.DirEntry, err error) error {
			if err != nil || len(out) >= 2000 {
				return fs.SkipDir
			}
			depth := strings.Count(p, "/")
			if !d.IsDir() || depth == 0 {
				return nil
			}
			base := path.Base(p)
			if depth == 1 && strings.HasPrefix(base, "@") {
				return nil // a scope: its packages are one level down
			}
			if depth == 1 && strings.HasPrefix(base, ".") {
				return fs.SkipDir
			}
			var pkg struct {
				Name    string `json:"name"`
				Version string `json:"version"`
			}
			if readJSON(p+"/package.json", &pkg) == nil && pkg.Name != "" {
				out = append(out, InstalledPackage{Name: pkg.Name, Version: pkg.Version})
			}
			return fs.SkipDir
		})
		if err != nil {
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
