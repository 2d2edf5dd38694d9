package engine

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// installPath is where the installer's sandbox sees the cache entry it
// fills (the only writable host directory any sandbox ever gets, and no
// program of a run ever sees it writable).
const installPath = "/opt/mcp-code-runner/install"

// installerImage names the registry image whose package managers install.
const installerImage = "packages"

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
func (e *Engine) Install(ctx context.Context, lang languages.Language, specs []string, runID string) (*packages.Installation, error) {
	if err := packages.Check(e.cfg, e.reg, lang, specs); err != nil {
		return nil, err
	}
	m, _ := e.reg.PackageManager(lang) // CheckPackages found it
	root, err := packages.CacheDir(e.cfg)
	if err != nil {
		return nil, &Error{Code: CodeInternal, Err: err, Message: err.Error()}
	}
	key := e.installKey(m, specs)
	dir := filepath.Join(root, key)
	mu, _ := installLocks.LoadOrStore(dir, &sync.Mutex{})
	mu.(*sync.Mutex).Lock()
	defer mu.(*sync.Mutex).Unlock()
	if in, err := packages.ReadManifest(dir, m); err == nil {
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
	if err := os.WriteFile(filepath.Join(tmp, packages.ManifestName), data, 0o644); err != nil {
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

// installerOpensEntry lets the server remove and link what the installer
// wrote: under a rootless engine, or a server that is not root, the
// installer's uid is not the server's, and the files would otherwise
// outlive every cleanup. The cache directory keeps other users out. It runs
// after the package manager, in the installer's sandbox.
var installerOpensEntry = []string{"find", installPath, "-mindepth", "1", "-exec", "chmod", "a+rwX", "{}", "+"}

// runInstaller installs specs into dir (mounted writable in the installer's
// sandbox) and reads what was installed.
func (e *Engine) runInstaller(ctx context.Context, lang languages.Language, m languages.PackageManager, specs []string, dir, runID string) (*packages.Installation, error) {
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
	installed, err := packages.ReadInstalled(dir, m.Listing)
	if err != nil {
		return nil, &Error{Code: CodeInstall, Err: err, Message: fmt.Sprintf("%s: reading what was installed: %v", what, err)}
	}
	e.log.Info("packages installed", "run", runID, "manager", m.Name, "installed", len(installed), "bytes", report.Bytes)
	return &packages.Installation{Installed: installed, Network: &report, Manager: m}, nil
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
