package sessions

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Options are what create_session asks for besides the language.
type Options struct {
	// Network is the session's tier ("" is none), for all its calls.
	Network string
	// Packages are installed before the session starts.
	Packages []string
	// Secrets name the operator's secrets that every call of the session
	// uses (gate.Gate.CheckSecrets checks them for the session's owner).
	Secrets []string
	// Isolation is what the session's sandbox is made with
	// (engine.ResolveIsolation: at least the operator's).
	Isolation string
	// Tools name the MCP servers whose tools every call of the session
	// may call (code mode; engine.CheckTools checks them for its owner).
	Tools []string
}

// extras are a session's network and packages: its proxy, and the
// directory of its packages, which its sandbox sees read-only at
// packages.Path. Installing more replaces the directory's contents
// with hard links to a cache entry: nothing is copied, and the sandbox sees
// the new files at once without a new mount.
type extras struct {
	tier string
	// isolation is the session's sandbox's, for all its sandboxes (after
	// a pause, a fork, a restart).
	isolation sandbox.Isolation
	proxy     *egress.Proxy
	// env is what every call of the session gets: the proxy, the
	// packages' paths and its secrets' placeholders.
	env []string
	// secrets name the operator's secrets the proxy writes into requests
	// (never their values); files are what every call gets in its
	// workspace for them (the CA bundle).
	secrets []string
	files   []wire.File
	// tools name the MCP servers the session's calls may call.
	tools []string

	installMu sync.Mutex // one install at a time
	mu        sync.Mutex // guards specs and installed
	dir       string     // "" when the session takes no packages
	specs     []string
	installed []engine.InstalledPackage
}

// packages lists the session's packages.
func (x *extras) packages() []engine.InstalledPackage {
	x.mu.Lock()
	defer x.mu.Unlock()
	return append([]engine.InstalledPackage(nil), x.installed...)
}

// close stops the session's proxy and removes its packages' links.
func (x *extras) close() {
	x.proxy.Close()
	if x.dir != "" {
		_ = os.RemoveAll(x.dir)
	}
}

// start starts a session's sandbox for owner with its network, packages
// and secrets (checked again at each start: a fork or a resume gets only
// what the operator's configuration allows the owner now). A
// language with a package manager gets a packages directory whenever the
// operator allows the packages tier, so that install_packages can add to
// it later.
func (m *Manager) start(ctx context.Context, owner string, lang languages.Language, opts Options, idle time.Duration) (sandbox.Sandbox, *extras, error) {
	iso, err := engine.ResolveIsolation(m.eng.Config(), m.eng.Backend(), owner, opts.Isolation)
	if err != nil {
		return nil, nil, err
	}
	// Spares are made with the operator's isolation.
	if tier, err := m.gate.Check(opts.Network); err == nil && iso == m.eng.Template(lang).Isolation && m.spares.fit(lang, tier, opts, idle) {
		if s, ok := m.spares.take(lang); ok {
			return s.sb, s.x, nil
		}
	}
	return m.startNew(ctx, owner, lang, opts, idle, 0)
}

// startNew starts a new sandbox for start, or for a spare (spares.go),
// which lives ahead longer than a session's life.
func (m *Manager) startNew(ctx context.Context, owner string, lang languages.Language, opts Options, idle, ahead time.Duration) (sandbox.Sandbox, *extras, error) {
	t, x, err := m.template(ctx, owner, lang, opts, idle, ahead)
	if err != nil {
		return nil, nil, err
	}
	sb, err := m.eng.NewSandbox(ctx, lang, t)
	if err != nil {
		x.close()
		return nil, nil, err
	}
	return sb, x, nil
}

// template is the template of a session's sandbox for owner, with its
// network, packages and secrets, which it makes (and the caller closes).
func (m *Manager) template(ctx context.Context, owner string, lang languages.Language, opts Options, idle, ahead time.Duration) (sandbox.Template, *extras, error) {
	tier, err := m.gate.Check(opts.Network)
	if err != nil {
		return sandbox.Template{}, nil, err
	}
	if err := packages.Check(m.eng.Config(), m.eng.Registry(), lang, opts.Packages); err != nil {
		return sandbox.Template{}, nil, err
	}
	secrets, err := m.gate.CheckSecrets(owner, opts.Secrets, tier, lang)
	if err != nil {
		return sandbox.Template{}, nil, err
	}
	iso, err := engine.ResolveIsolation(m.eng.Config(), m.eng.Backend(), owner, opts.Isolation)
	if err != nil {
		return sandbox.Template{}, nil, err
	}
	if err := engine.CheckTools(m.tools, owner, opts.Tools); err != nil {
		return sandbox.Template{}, nil, err
	}
	x := &extras{tier: tier, secrets: gate.SecretNames(secrets), isolation: iso, tools: opts.Tools}
	ok := false
	defer func() {
		if !ok {
			x.close()
		}
	}()
	t := m.eng.Template(lang)
	t.MaxLife = engine.HeldLife(m.eng.Config().Limits, time.Duration(m.cfg.MaxLifeSeconds)*time.Second+ahead)
	t.Purpose = "session-" + lang.Name
	t.Isolation = iso
	// The sandbox waits for its next server as long as it would wait
	// for its next call.
	t.ReattachGrace = idle
	x.proxy, x.env, x.files = m.gate.SessionProxy(ctx, tier, lang, secrets)
	if x.proxy != nil {
		t.Egress = x.proxy
	}
	if lang.Packages != "" && egress.Rank(m.eng.Config().Network.MaxTier) >= egress.Rank(egress.TierPackages) {
		if err := m.packagesDir(x, lang); err != nil {
			return sandbox.Template{}, nil, err
		}
		t.Mounts = append(t.Mounts, sandbox.Mount{Source: x.dir, Target: packages.Path})
		if len(opts.Packages) > 0 {
			if _, err := m.install(ctx, lang, x, opts.Packages, "session"); err != nil {
				return sandbox.Template{}, nil, err
			}
		}
	}
	ok = true
	return t, x, nil
}

// packagesDir makes the session's own packages directory in the package
// cache, empty, and points the session's programs at it.
func (m *Manager) packagesDir(x *extras, lang languages.Language) error {
	root, err := packages.CacheDir(m.eng.Config())
	if err != nil {
		return &engine.Error{Code: engine.CodeInternal, Err: err, Message: err.Error()}
	}
	if err := os.MkdirAll(filepath.Join(root, "sessions"), 0o755); err != nil {
		return &engine.Error{Code: engine.CodeInternal, Err: err, Message: err.Error()}
	}
	dir, err := os.MkdirTemp(filepath.Join(root, "sessions"), "s")
	if err == nil {
		err = os.Chmod(dir, 0o755)
	}
	pm, _ := m.eng.Registry().PackageManager(lang)
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, pm.Dir), 0o755)
	}
	if err != nil {
		return &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("making the session's packages directory: %v", err)}
	}
	x.dir = dir
	x.env = append(x.env, packages.Env(pm)...)
	return nil
}

// install installs specs for a session, on top of what it has: the cache
// entry of all its packages together (so their versions are resolved
// together) replaces what the session's directory held.
func (m *Manager) install(ctx context.Context, lang languages.Language, x *extras, specs []string, runID string) (*packages.Installation, error) {
	if x.dir == "" {
		if lang.Packages == "" {
			if err := packages.Check(m.eng.Config(), m.eng.Registry(), lang, specs); err != nil {
				return nil, err
			}
			return nil, invalid("%s has no package manager on this server, so a session of it takes no packages; use a language that list_languages shows with one", lang.Name)
		}
		return nil, invalid("this server does not install packages (network.max_tier is %q; packages needs at least \"packages\")", m.eng.Config().Network.MaxTier)
	}
	if len(specs) == 0 {
		return nil, invalid("packages is empty; name at least one, like requests==2.32.3 or lodash@4")
	}
	x.installMu.Lock()
	defer x.installMu.Unlock()
	x.mu.Lock()
	all := append(append([]string(nil), x.specs...), specs...)
	x.mu.Unlock()
	in, err := m.eng.Install(ctx, lang, all, runID)
	if err != nil {
		return nil, err
	}
	if err := relink(in.Dir, x.dir, in.Manager.Dir); err != nil {
		return nil, &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("placing the packages in the session: %v", err)}
	}
	x.mu.Lock()
	x.specs, x.installed = all, in.Installed
	x.mu.Unlock()
	return in, nil
}

// relink replaces the contents of dst's directory sub (the package
// manager's, [languages.PackageManager.Dir]) with hard links to those of
// the cache entry src. It never follows a link: symbolic links are copied
// as links (the sandbox resolves them in its own file system).
func relink(src, dst, sub string) error {
	d := filepath.Join(dst, sub)
	entries, err := os.ReadDir(d)
	if err != nil {
		return err
	}
	for _, en := range entries {
		if err := os.RemoveAll(filepath.Join(d, en.Name())); err != nil {
			return err
		}
	}
	s := filepath.Join(src, sub)
	if _, err := os.Lstat(s); err != nil {
		return nil // the install put nothing there
	}
	err = filepath.WalkDir(s, func(p string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(s, p)
		if rel == "." {
			return nil
		}
		target := filepath.Join(d, rel)
		switch {
		case de.Type()&fs.ModeSymlink != 0:
			to, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(to, target)
		case de.IsDir():
			return os.Mkdir(target, 0o755)
		case de.Type().IsRegular():
			return linkOrCopy(p, target)
		default:
			return nil // no devices, pipes or sockets
		}
	})
	return err
}

// linkOrCopy hard-links src at dst, or copies it where a link is refused:
// under a rootless engine the installer's files belong to a subordinate uid,
// and the kernel's protected_hardlinks lets no one else link them; a cache
// on another filesystem cannot be linked either.
func linkOrCopy(src, dst string) error {
	err := os.Link(src, dst)
	if err == nil || !errors.Is(err, fs.ErrPermission) && !errors.Is(err, syscall.EXDEV) {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	info, err := in.Stat()
	if err != nil {
		return err
	}
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
