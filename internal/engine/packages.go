package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// PackagesPath is where a sandbox sees the packages installed for it,
// read-only: each package manager's directory
// ([languages.PackageManager.Dir]) in it.
const PackagesPath = "/opt/mcp-code-runner/packages"

// installPath is where the installer's sandbox sees the cache entry it
// fills (the only writable host directory any sandbox ever gets, and no
// program of a run ever sees it writable).
const installPath = "/opt/mcp-code-runner/install"

// installerImage names the registry image whose package managers install.
const installerImage = "packages"

// manifestName is the server's record of an install, in its cache entry.
const manifestName = "mcr-manifest.json"

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
	return sandbox.Mount{Source: in.Dir, Target: PackagesPath}
}

// Env is what makes the installed packages importable by the program.
func (in *Installation) Env() []string { return PackagesEnv(in.Manager) }

// PackagesEnv is what makes the packages that m installed importable by a
// sandbox's programs, with the installation at [PackagesPath].
func PackagesEnv(m languages.PackageManager) []string {
	env := make([]string, len(m.Env))
	for i, kv := range m.Env {
		env[i] = strings.ReplaceAll(kv, "{dir}", path.Join(PackagesPath, m.Dir))
	}
	return env
}

// CacheDir is the host directory of installed packages: the daemon must
// see it at the same path, so a server with a shared directory keeps it
// there.
func (e *Engine) CacheDir() (string, error) {
	dir := e.cfg.Packages.CacheDir
	if dir == "" && e.cfg.SharedDir != "" {
		dir = filepath.Join(e.cfg.SharedDir, "packages")
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
	// The entries inside are open to every uid (see installerOpensEntry);
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

// CheckPackages validates the packages of a request for lang.
func (e *Engine) CheckPackages(lang languages.Language, specs []string) error {
	if len(specs) == 0 {
		return nil
	}
	m, ok := e.reg.PackageManager(lang)
	if !ok {
		return invalid("%s takes no packages here; packages are installed for %s", lang.Name, strings.Join(e.packageLanguages(), ", "))
	}
	if _, ok := e.cfg.Packages.RegistryURL(m.RegistrySetting); !ok {
		return &Error{Code: CodeInternal, Message: fmt.Sprintf("the package manager %s of the language registry installs from packages.%s, which is no setting of this server; the operator's languages file must name one of %s", m.Name, m.RegistrySetting, strings.Join(e.cfg.Packages.RegistrySettings(), ", "))}
	}
	if egress.Rank(e.cfg.Network.MaxTier) < egress.Rank(egress.TierPackages) {
		return invalid("installing packages needs network access to the package registry, and this server allows network %q only; ask the operator to set network.max_tier to packages", e.cfg.Network.MaxTier)
	}
	if n := len(specs); n > e.cfg.Packages.MaxPackages {
		return invalid("%d packages asked for, the limit is %d", n, e.cfg.Packages.MaxPackages)
	}
	for _, s := range specs {
		if !packageSpec.MatchString(s) || strings.Contains(s, "://") || strings.Contains(s, "..") {
			return invalid("package %q is not a package name with an optional version, like requests==2.32.3 or lodash@4 (no options, paths or URLs)", s)
		}
	}
	return nil
}

func (e *Engine) packageLanguages() []string {
	var out []string
	for _, l := range e.reg.Languages() {
		if l.Packages != "" {
			out = append(out, l.Name)
		}
	}
	return out
}

// registryURL is the registry m installs from: the packages setting it
// names.
func (e *Engine) registryURL(m languages.PackageManager) string {
	u, _ := e.cfg.Packages.RegistryURL(m.RegistrySetting)
	return u
}

// installKey names the cache entry of specs for lang: the package manager,
// its registry, the installer image and the sorted specs. Two requests for
// the same packages and versions share an entry.
func (e *Engine) installKey(m languages.PackageManager, specs []string) string {
	sorted := append([]string(nil), specs...)
	sort.Strings(sorted)
	img, _ := e.reg.Image(installerImage)
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s", m.Name, e.registryURL(m), img.Tag, strings.Join(sorted, "\x00"))
	return m.Name + "-" + hex.EncodeToString(h.Sum(nil))[:32]
}

// installLocks serialises installs of one cache entry: the second waits
// and then finds it.
var installLocks sync.Map // key -> *sync.Mutex

// Install makes sure specs are installed for lang in the host cache and
// returns the entry. A miss runs the language's package manager in a
// sandbox of the installer image whose network is the packages tier; the
// installer runs no package code (npm --ignore-scripts, pip
// --only-binary :all:), so nothing a package ships runs with the cache
// writable.
func (e *Engine) Install(ctx context.Context, lang languages.Language, specs []string, runID string) (*Installation, error) {
	if err := e.CheckPackages(lang, specs); err != nil {
		return nil, err
	}
	m, _ := e.reg.PackageManager(lang) // CheckPackages found it
	root, err := e.CacheDir()
	if err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: err.Error()}
	}
	key := e.installKey(m, specs)
	dir := filepath.Join(root, key)
	mu, _ := installLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if in, err := readManifest(dir, m); err == nil {
		in.Cached = true
		e.log.Info("packages from the cache", "run", runID, "manager", lang.Packages, "packages", strings.Join(specs, " "), "entry", key)
		return in, nil
	}
	tmp, err := os.MkdirTemp(root, "tmp-"+key+"-")
	if err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: fmt.Sprintf("making a package cache entry: %v", err)}
	}
	keep := false
	defer func() {
		if !keep {
			_ = os.RemoveAll(tmp)
		}
	}()
	// The installer's user (another uid) fills it.
	if err := os.Chmod(tmp, 0o777); err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: err.Error()}
	}
	in, err := e.runInstaller(ctx, lang, m, specs, tmp, runID)
	if err != nil {
		return nil, err
	}
	_ = os.Chmod(tmp, 0o755)
	data, _ := json.Marshal(in.Installed)
	if err := os.WriteFile(filepath.Join(tmp, manifestName), data, 0o644); err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: err.Error()}
	}
	_ = os.RemoveAll(dir) // a torn entry without a manifest
	if err := os.Rename(tmp, dir); err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: fmt.Sprintf("keeping the installed packages: %v", err)}
	}
	keep = true
	in.Dir = dir
	return in, nil
}

func readManifest(dir string, m languages.PackageManager) (*Installation, error) {
	data, err := os.ReadFile(filepath.Join(dir, manifestName))
	if err != nil {
		return nil, err
	}
	in := &Installation{Dir: dir, Manager: m}
	if err := json.Unmarshal(data, &in.Installed); err != nil {
		return nil, err
	}
	return in, nil
}

// installerOpensEntry lets the server remove and link what the installer
// wrote: under a rootless engine, or a server that is not root, the
// installer's uid is not the server's, and the files would otherwise
// outlive every cleanup. The cache directory keeps other users out. It runs
// after the package manager, in the installer's sandbox.
var installerOpensEntry = []string{"find", installPath, "-mindepth", "1", "-exec", "chmod", "a+rwX", "{}", "+"}

// runInstaller installs specs into dir (mounted writable in the installer's
// sandbox) and reads what was installed.
func (e *Engine) runInstaller(ctx context.Context, lang languages.Language, m languages.PackageManager, specs []string, dir, runID string) (*Installation, error) {
	img, ok := e.reg.Image(installerImage)
	if !ok {
		return nil, invalid("the language registry has no %q image, which installs packages", installerImage)
	}
	pc := e.cfg.Packages
	registry := e.registryURL(m)
	trusted := ""
	if host, _, err := egress.HostOfURL(registry); err == nil && strings.HasPrefix(registry, "http://") {
		trusted = host // pip refuses a plain-HTTP index it is not told to trust
	}
	var files []wire.File
	ca := hostExtraCACerts()
	if pc.ExtraCACert != "" {
		var err error
		if ca, err = os.ReadFile(pc.ExtraCACert); err != nil {
			return nil, &Error{Code: CodeInternal, Err: err, Message: fmt.Sprintf("reading packages.extra_ca_cert: %v", err)}
		}
	}
	if len(ca) > 0 {
		files = append(files, wire.File{Path: "extra-ca.pem", Data: ca})
	}
	proxy, _ := e.gate.Proxy(ctx, egress.TierPackages, lang, runID, nil)
	defer proxy.Close()
	t := e.Template(lang)
	t.Image = img.Tag
	t.Purpose = "install"
	t.Resources.MemoryMB = pc.MaxMB + 512 // the tmpfs holding the install counts against it
	t.Resources.TmpMB = pc.MaxMB
	t.Resources.PidsLimit = max(t.Resources.PidsLimit, 256)
	t.Resources.CPUs = max(t.Resources.CPUs, 1)
	t.Egress = proxy
	t.Mounts = []sandbox.Mount{{Source: dir, Target: installPath, Writable: true}}
	argv := append(append(slices.Clone(m.Install), registry, trusted), specs...)
	timeout := time.Duration(pc.TimeoutSeconds) * time.Second
	job := sandbox.Job{RunID: runID + "-install", Deadline: timeout + deadlineGrace, Request: wire.Request{
		Workdir: wire.WorkspacePath, OutputLimit: 256 << 10, Files: files,
		Stages: []wire.Stage{
			{Name: "install", Argv: argv, Env: append(gate.ProxyEnv(), "INSTALL_DIR="+installPath), TimeoutMs: timeout.Milliseconds(), StopOnFailure: true},
			{Name: "open", Argv: installerOpensEntry, TimeoutMs: timeout.Milliseconds()},
		},
	}}
	e.log.Info("installing packages", "run", runID, "manager", m.Name, "packages", strings.Join(specs, " "), "registry", registry)
	if err := e.awaitImage(ctx, img, lang, nil); err != nil {
		return nil, err
	}
	sb, err := e.backend.Create(ctx, t)
	if errors.Is(err, sandbox.ErrImageMissing) {
		// The runtime image may well be there: it is the installer's that is not.
		return nil, imageMissing(err, img, fmt.Sprintf("the image %s, whose %s installs %s's packages,", img.Tag, m.Name, lang.Name), img.Name)
	}
	if err != nil {
		return nil, e.explain(err, lang)
	}
	res, err := sb.Exec(ctx, job, nil)
	sb.Close()
	report := proxy.Report()
	if err != nil {
		return nil, e.explain(err, lang)
	}
	what := fmt.Sprintf("installing %s with %s from %s", strings.Join(specs, " "), m.Name, registry)
	if len(res.Stages) < 2 || res.Killed || slices.ContainsFunc(res.Stages, func(st sandbox.StageOutput) bool { return st.ExitCode != 0 || st.TimedOut }) {
		return nil, installError(what, res, report, pc)
	}
	installed, err := readInstalled(dir, m.Listing)
	if err != nil {
		return nil, &Error{Code: CodeInstall, Err: err, Message: fmt.Sprintf("%s: reading what was installed: %v", what, err)}
	}
	e.log.Info("packages installed", "run", runID, "manager", m.Name, "installed", len(installed), "bytes", report.Bytes)
	return &Installation{Installed: installed, Network: &report, Manager: m}, nil
}

// installError is the package manager's own message with a summary of
// what went wrong and what to do.
func installError(what string, res *sandbox.Result, report egress.Report, pc config.Packages) error {
	var out string
	summary := "the package manager failed"
	if len(res.Stages) > 0 {
		st := res.Stages[0]
		out = tail(string(st.Stderr)+string(st.Stdout), 4000)
		switch {
		case st.TimedOut:
			summary = fmt.Sprintf("the install took longer than packages.timeout_seconds (%d s)", pc.TimeoutSeconds)
		case strings.Contains(out, "No space left") || strings.Contains(out, "ENOSPC"):
			summary = fmt.Sprintf("the install is larger than packages.max_mb (%d MiB)", pc.MaxMB)
		case unreachable(out, report):
			summary = "the registry could not be reached; it may be down, or the operator's registry URL is wrong"
		case strings.Contains(out, "E404") || strings.Contains(out, "No matching distribution") || strings.Contains(out, "404 Not Found"):
			summary = "a package or version does not exist in the registry; check the names and versions"
		case strings.Contains(out, "ERESOLVE") || strings.Contains(out, "ResolutionImpossible") || strings.Contains(out, "conflict"):
			summary = "the versions asked for conflict; relax a version constraint"
		}
	} else if res.Killed {
		summary = "the installer was stopped at its deadline"
	}
	if d := gate.Denied(report); d != "" {
		summary += "; " + d
	}
	return &Error{Code: CodeInstall, Message: fmt.Sprintf("%s failed: %s. The package manager said:\n%s", what, summary, out)}
}

// hostExtraCACerts returns the certificates the administrator added to this
// machine's trust store (/usr/local/share/ca-certificates/**/*.crt, the
// Debian and Ubuntu convention), which the installers trust when
// packages.extra_ca_cert is not set, as the image builder does
// (images.HostExtraCACerts); usually none.
func hostExtraCACerts() []byte {
	var out []byte
	_ = filepath.WalkDir("/usr/local/share/ca-certificates", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".crt") {
			if data, err := os.ReadFile(p); err == nil {
				out = append(append(out, bytes.TrimSpace(data)...), '\n')
			}
		}
		return nil
	})
	return out
}

// unreachable reports whether an install failed because the registry
// could not be reached: the proxy could not connect to it, or the package
// manager says so.
func unreachable(out string, report egress.Report) bool {
	for _, d := range report.Denied {
		if strings.Contains(d, "connection refused") || strings.Contains(d, "does not resolve") || strings.Contains(d, "i/o timeout") {
			return true
		}
	}
	for _, s := range []string{"ECONNREFUSED", "ETIMEDOUT", "EAI_AGAIN", "Connection refused", "ProxyError", "502 Bad Gateway", "503 Service Unavailable"} {
		if strings.Contains(out, s) {
			return true
		}
	}
	return false
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// readInstalled lists what an install put in dir, as the manager's listing
// ([languages.PackageManager.Listing]) says to read it, reading the files
// the installer wrote through an os.Root (no link leads out of dir) and
// bounded in size.
func readInstalled(dir, listing string) ([]InstalledPackage, error) {
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
