// Package languages holds the language registry: which runtimes exist, which
// image each runs in, and how a program is compiled and run. The registry is
// data (registry.json, embedded in the binary); an operator may add or
// override entries from a file of the same shape.
package languages

import (
	"cmp"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent/entry"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

//go:embed registry.json
var builtin []byte

// Image is one runtime image that the project builds.
type Image struct {
	// Name is the short name languages refer to ("python").
	Name string `json:"name"`
	// Tag is the full image reference, versioned ("mcp-code-runner/python:1").
	Tag string `json:"tag"`
	// Dockerfile names the Dockerfile in the images package's embedded files.
	Dockerfile string `json:"dockerfile"`
	// From is the name of the image this one builds on; "root" is the bare
	// Debian base, pulled or bootstrapped.
	From string `json:"from"`
	// Description says what the image carries.
	Description string `json:"description,omitempty"`
	// VariantOf, if set, names the image this one is a larger variant of
	// (python-ml of python): the languages of that image are measured in
	// this one when it is built, so that an operator can run them here (a
	// languages file that points them at it). A variant is optional: it is
	// built only when named, or when a language runs in it.
	VariantOf string `json:"variant_of,omitempty"`
	// OnDemand marks an image that is left out of the default set (`images
	// build` with no names, `make images` and so `make run`): it is built
	// by `images build --all`, when one of its languages or the image is
	// named, and by `make test` and CI. Its languages are first-class; the
	// image is only large or rarely asked for, so that a fresh machine
	// serves sooner without it.
	OnDemand bool `json:"on_demand,omitempty"`
	// BuildSeconds is about how long the image took to build from scratch
	// on the reference machine (2 cores, three builds side by side): of the
	// images ready to build, the builder starts first the one with the
	// longest line of builds ahead of it (its own and its longest line of
	// images built on it), so that a run does not end waiting on one long
	// build started last. An image without it starts after those with it.
	BuildSeconds int `json:"build_seconds,omitempty"`
}

// Limits are per-language overrides of the operator's default limits, for
// runtimes that need more (compilers need memory and time).
type Limits struct {
	CompileTimeoutSeconds int `json:"compile_timeout_seconds,omitempty"`
	TimeoutSeconds        int `json:"timeout_seconds,omitempty"`
	MemoryMB              int `json:"memory_mb,omitempty"`
	PidsLimit             int `json:"pids_limit,omitempty"`
}

// Language is one entry of the registry.
type Language struct {
	// Name is the canonical, lower-case name ("python").
	Name string `json:"name"`
	// DisplayName is the human name ("Python").
	DisplayName string `json:"display_name,omitempty"`
	// Aliases are other names accepted for the language ("py").
	Aliases []string `json:"aliases,omitempty"`
	// Image is the name of the Image the language runs in.
	Image string `json:"image"`
	// File is the file name the source code is written to in the workspace.
	File string `json:"file"`
	// Compile is the optional compile command, run in the workspace.
	Compile []string `json:"compile,omitempty"`
	// Run is the run command; the user's arguments are appended to it.
	Run []string `json:"run"`
	// Version prints the runtime's version; it runs when the image is built.
	Version []string `json:"version"`
	// Preinstalled, if set, prints the packages the image holds for the
	// language, one "name version" line each; it runs when the image is
	// built, and list_languages reports what it printed.
	Preinstalled []string `json:"preinstalled,omitempty"`
	// Entry, if set, names the entry-point convention (internal/agent/entry)
	// the agent applies to the code before the first stage: it may save the
	// code under another name than File (Java's public class Solution goes
	// to Solution.java) and finds what the program starts with; "{file}" and
	// "{main}" in Compile and Run stand for the two, and "{form}" for the
	// source form the compiler must be told (COBOL's free or fixed format,
	// 32- or 64-bit assembly). Code the convention cannot run fails the
	// first stage with a message saying what it expects.
	Entry string `json:"entry,omitempty"`
	// TypeErrors, if set, says how the compile stage reports type errors
	// that do not stop the run, as tsc emits runnable JavaScript despite
	// them (TypeScript's); the result counts them.
	TypeErrors *TypeErrors `json:"type_errors,omitempty"`
	// Env holds extra NAME=value pairs set for every stage.
	Env []string `json:"env,omitempty"`
	// Prestart, if set, is started by a warm sandbox as soon as it exists,
	// before any job: a compiler server that loads and warms up ahead of the
	// program (Kotlin's). It gets the stages' environment; whatever is left
	// of it is killed when the first stage ends. The compile command decides
	// whether to use it, and must work without it (cold sandboxes have none).
	Prestart []string `json:"prestart,omitempty"`
	// Warm, if set, is an interpreter that a warm sandbox starts before its
	// job and hands the run stage to, so the run skips the interpreter's
	// start. It is used only when the run stage is the plain run command
	// with the language's own environment (no env from the request).
	Warm *WarmInterpreter `json:"warm,omitempty"`
	// Kernel, if set, runs session cells in a long-lived interpreter so that
	// variables and imports persist from call to call.
	Kernel *Kernel `json:"kernel,omitempty"`
	// Limits override the operator's defaults for this language.
	Limits Limits `json:"limits,omitzero"`
	// Packages names the PackageManager that installs the language's
	// packages; empty: the language takes no packages.
	Packages string `json:"packages,omitempty"`
	// Example is a hello-world program, used in prompts, tests and
	// benchmarks.
	Example string `json:"example,omitempty"`
	// Probe, if set, is the test program doctor and setup run in place of
	// Example: one that shows the sandbox runs as a non-root user without
	// network.
	Probe string `json:"probe,omitempty"`
	// HostRun, if set, runs Example as a plain process on a host that has
	// the runtime (the first argument is the program, looked up on PATH):
	// the bare baseline the benchmarks compare sandboxed runs with.
	HostRun []string `json:"host_run,omitempty"`
	// Architectures, if set, are the only machine architectures (Go's
	// names: "amd64", "arm64") whose sandboxes can run the language: its
	// runtime does not exist for the others (Debian packages Crystal's
	// compiler for amd64 only; x86-64 assembly is amd64 machine code). In
	// an image built for another architecture the language's version is
	// not measured (its runtime may be absent: the dialects image has no
	// Crystal on arm64), and in a sandbox of another architecture the agent
	// refuses the run before its first stage, with ArchitecturesReason.
	// Empty: every architecture.
	Architectures []string `json:"architectures,omitempty"`
	// ArchitecturesReason says why the language runs only on Architectures,
	// and what to use elsewhere; required with them.
	ArchitecturesReason string `json:"architectures_reason,omitempty"`
}

// KnownArchitectures are the sandbox architectures the images are built
// for (Go's names).
var KnownArchitectures = []string{"amd64", "arm64"}

// RunsOn reports whether the language's runtime exists for sandboxes of
// the architecture arch (Go's name).
func (l Language) RunsOn(arch string) bool {
	return len(l.Architectures) == 0 || slices.Contains(l.Architectures, arch)
}

// ArchitectureRefusal is what a run of the language says in a sandbox of
// an architecture it does not run on ("Crystal runs only in amd64
// sandboxes: ..."); empty for a language that runs on every architecture.
func (l Language) ArchitectureRefusal() string {
	if len(l.Architectures) == 0 {
		return ""
	}
	name := l.DisplayName
	if name == "" {
		name = l.Name
	}
	return fmt.Sprintf("%s runs only in %s sandboxes: %s", name, strings.Join(l.Architectures, " and "), l.ArchitecturesReason)
}

// TypeErrors describes a compiler's type errors that do not stop the run.
type TypeErrors struct {
	// Pattern matches each line of the compile stage's stderr that reports
	// a type error (RE2 syntax).
	Pattern string `json:"pattern"`
	// FatalEnv is a NAME=value pair given to the compile stage when the
	// operator makes type errors fatal (type_errors_fatal); the compile
	// command then fails on them.
	FatalEnv string `json:"fatal_env"`
}

// Kernel is a language's session interpreter.
type Kernel struct {
	// Name is the file of the kernel program built in (wire.Program).
	Name string `json:"name"`
	// Run starts the interpreter; "{kernel}" stands for the program's path.
	Run []string `json:"run"`
	// Fork says the kernel program copies its interpreter by fork() when
	// asked (wire.OpKernelFork): fork_session then copies a session's live
	// state inside its sandbox instead of replaying its cells.
	Fork bool `json:"fork,omitempty"`
}

// WarmInterpreter is a language's pre-started interpreter.
type WarmInterpreter struct {
	// Name is the file of the program built in (wire.Program) that the
	// interpreter runs, or is "script": the language's own run command is started with a FIFO
	// in place of its file, and reads the script from it when the run comes
	// (for interpreters that read their script as a stream, like bash).
	Name string `json:"name"`
	// Run starts the interpreter; "{program}" stands for the program's
	// source, an argument "{program_file}" for the path of a file holding
	// it (for interpreters that load it, like node's --require). Empty for
	// "script".
	Run []string `json:"run,omitempty"`
}

// PackageManager is how packages are installed for the languages that
// name it in [Language.Packages]: the installer image runs Install, and the
// sandboxes of a run see the result read-only.
type PackageManager struct {
	// Name is what languages name it by ("pip").
	Name string `json:"name"`
	// RegistrySetting is the packages setting of the server's
	// configuration that holds the registry the manager installs from
	// ("pypi_index_url"; the configuration package's Packages.RegistryURL reads it).
	RegistrySetting string `json:"registry_setting"`
	// Dir is the directory of the installation that the manager fills and
	// that programs import from ("python").
	Dir string `json:"dir"`
	// Env are the NAME=value pairs that make the installed packages
	// importable; "{dir}" stands for Dir's path in the sandbox.
	Env []string `json:"env"`
	// Listing names how the server reads what an install put in place:
	// "pip_report" (pip's --report, pip-report.json) or "node_modules"
	// (the package.json of every package at the top of node_modules).
	Listing string `json:"listing"`
	// Install is the installer's command. The server appends the registry
	// URL, the registry's host when it is plain HTTP (for managers that
	// must be told to trust it, else empty), and then the package specs,
	// which are names and versions, never options. INSTALL_DIR in its
	// environment is the directory it copies the installation to.
	Install []string `json:"install"`
}

// PackageListings are the known values of [PackageManager.Listing].
var PackageListings = []string{"pip_report", "node_modules"}

// Roles name the languages that tools of the project use when the user
// names none.
type Roles struct {
	// Probe are the languages doctor and setup test-run, in order.
	Probe []string `json:"probe,omitempty"`
	// Shell is a language whose image runs `true`: the benchmarks'
	// container churn.
	Shell string `json:"shell,omitempty"`
	// Load is the benchmarks' default language of sustained load.
	Load string `json:"load,omitempty"`
	// ExampleCall is the example run_code call that the client
	// configuration shows.
	ExampleCall *ExampleCall `json:"example_call,omitempty"`
	// SessionState is the session the benchmarks fork, pause and resume:
	// a cell that builds a large state and one that reads it.
	SessionState *SessionState `json:"session_state,omitempty"`
}

// SessionState is a language and two cells of one session: State builds
// a large interpreter state, Read reads it back.
type SessionState struct {
	Language string `json:"language"`
	State    string `json:"state"`
	Read     string `json:"read"`
	// Libraries imports the language's common data libraries: the idle
	// session whose memory, live and paused, the benchmarks measure.
	Libraries string `json:"libraries,omitempty"`
	// Memory is a cell whose value is the bytes of memory its sandbox
	// holds, as its cgroup counts them.
	Memory string `json:"memory,omitempty"`
}

// ExampleCall is a run_code call's arguments: a language and its code.
type ExampleCall struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

// Compiled reports whether the language has a compile stage.
func (l *Language) Compiled() bool { return len(l.Compile) > 0 }

// File is the registry file format.
type File struct {
	Roles           Roles            `json:"roles,omitzero"`
	PackageManagers []PackageManager `json:"package_managers,omitempty"`
	Images          []Image          `json:"images"`
	Languages       []Language       `json:"languages"`
}

// Registry is a validated, immutable set of languages, images and package
// managers.
type Registry struct {
	roles     Roles
	managers  map[string]PackageManager
	images    map[string]Image
	languages []Language
	byName    map[string]int // name or alias -> index into languages
	lookups   atomic.Int64   // calls of Lookup, for Lookups
}

// Builtin returns the registry embedded in the binary.
func Builtin() *Registry {
	r, err := Parse(builtin)
	if err != nil {
		panic(fmt.Sprintf("embedded language registry is invalid: %v", err))
	}
	return r
}

// Parse decodes and validates a registry file.
func Parse(data []byte) (*Registry, error) {
	var f File
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decoding language registry: %w", err)
	}
	return New(f)
}

// Load returns the built-in registry with the entries of the file at path
// added or overriding built-in entries of the same name. An empty path
// returns the built-in registry.
func Load(path string) (*Registry, error) {
	base := Builtin()
	if path == "" {
		return base, nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading language registry %s: %w", path, err)
	}
	var extra File
	if err := json.Unmarshal(data, &extra); err != nil {
		return nil, fmt.Errorf("decoding language registry %s: %w", path, err)
	}
	merged := base.File()
	if len(extra.Roles.Probe) > 0 {
		merged.Roles.Probe = extra.Roles.Probe
	}
	merged.Roles.Shell = cmp.Or(extra.Roles.Shell, merged.Roles.Shell)
	merged.Roles.Load = cmp.Or(extra.Roles.Load, merged.Roles.Load)
	merged.Roles.ExampleCall = cmp.Or(extra.Roles.ExampleCall, merged.Roles.ExampleCall)
	merged.Roles.SessionState = cmp.Or(extra.Roles.SessionState, merged.Roles.SessionState)
	for _, m := range extra.PackageManagers {
		if i := slices.IndexFunc(merged.PackageManagers, func(x PackageManager) bool { return x.Name == m.Name }); i >= 0 {
			merged.PackageManagers[i] = m
		} else {
			merged.PackageManagers = append(merged.PackageManagers, m)
		}
	}
	for _, img := range extra.Images {
		if i := slices.IndexFunc(merged.Images, func(x Image) bool { return x.Name == img.Name }); i >= 0 {
			merged.Images[i] = img
		} else {
			merged.Images = append(merged.Images, img)
		}
	}
	for _, l := range extra.Languages {
		if i := slices.IndexFunc(merged.Languages, func(x Language) bool { return x.Name == l.Name }); i >= 0 {
			merged.Languages[i] = l
		} else {
			merged.Languages = append(merged.Languages, l)
		}
	}
	r, err := New(merged)
	if err != nil {
		return nil, fmt.Errorf("language registry %s: %w", path, err)
	}
	return r, nil
}

// New validates f and builds a registry from it.
func New(f File) (*Registry, error) {
	r := &Registry{roles: f.Roles, managers: map[string]PackageManager{}, images: map[string]Image{}, byName: map[string]int{}}
	if err := r.addManagers(f.PackageManagers); err != nil {
		return nil, err
	}
	if err := r.addImages(f.Images); err != nil {
		return nil, err
	}
	langs := slices.Clone(f.Languages)
	for i := range langs {
		langs[i].Warm, langs[i].Kernel = programFiles(langs[i].Warm, langs[i].Kernel)
	}
	sort.Slice(langs, func(i, j int) bool { return langs[i].Name < langs[j].Name })
	for i, l := range langs {
		if err := r.checkLanguage(l); err != nil {
			return nil, err
		}
		for _, key := range append([]string{l.Name}, l.Aliases...) {
			key = strings.ToLower(key)
			if j, dup := r.byName[key]; dup {
				return nil, fmt.Errorf("name %q is used by both %q and %q", key, langs[j].Name, l.Name)
			}
			r.byName[key] = i
		}
	}
	r.languages = langs
	if err := r.checkRoles(f.Roles); err != nil {
		return nil, err
	}
	return r, nil
}

// addManagers adds the package managers, each valid and defined once.
func (r *Registry) addManagers(managers []PackageManager) error {
	for _, m := range managers {
		if err := validManager(m); err != nil {
			return err
		}
		if _, dup := r.managers[m.Name]; dup {
			return fmt.Errorf("package manager %q is defined twice", m.Name)
		}
		r.managers[m.Name] = m
	}
	return nil
}

// addImages adds the images, each defined once and built on a known one.
func (r *Registry) addImages(images []Image) error {
	for _, img := range images {
		if img.Name == "" || img.Tag == "" {
			return fmt.Errorf("image %q: name and tag are required", img.Name)
		}
		if _, dup := r.images[img.Name]; dup {
			return fmt.Errorf("image %q is defined twice", img.Name)
		}
		r.images[img.Name] = img
	}
	for _, img := range images {
		if img.From != "root" {
			if _, ok := r.images[img.From]; !ok {
				return fmt.Errorf("image %q builds on unknown image %q", img.Name, img.From)
			}
		}
		if v, ok := r.images[img.VariantOf]; img.VariantOf != "" && (!ok || v.VariantOf != "" || img.VariantOf == img.Name) {
			return fmt.Errorf("image %q: variant_of %q must name another image that is not a variant itself", img.Name, img.VariantOf)
		}
	}
	return nil
}

// checkLanguage checks one language's entry against the rules and the
// images and package managers already added.
func (r *Registry) checkLanguage(l Language) error {
	switch {
	case l.Name == "" || strings.ToLower(l.Name) != l.Name:
		return fmt.Errorf("language %q: name must be non-empty lower case", l.Name)
	case l.File == "" || strings.Contains(l.File, "/"):
		return fmt.Errorf("language %q: file must be a plain file name", l.Name)
	case len(l.Run) == 0:
		return fmt.Errorf("language %q: run command is required", l.Name)
	case len(l.Version) == 0:
		return fmt.Errorf("language %q: version command is required", l.Name)
	case l.Warm != nil && l.Warm.Name == "script" && (len(l.Warm.Run) > 0 || !slices.Contains(l.Run, l.File)):
		return fmt.Errorf("language %q: a script warm interpreter has no run command of its own, and the language's run command must name its file", l.Name)
	case l.Warm != nil && l.Warm.Name != "script" && (l.Warm.Name == "" || !slices.ContainsFunc(l.Warm.Run, func(a string) bool { return strings.Contains(a, "{program}") || a == "{program_file}" })):
		return fmt.Errorf("language %q: warm needs a name and a run command that contains {program} or {program_file}", l.Name)
	case l.Warm != nil && !wire.HasWarmProgram(l.Warm.Name):
		return fmt.Errorf("language %q: warm program %q is not built in (the programs are the files of internal/wire/programs)", l.Name, l.Warm.Name)
	case l.Kernel != nil && !wire.HasProgram(l.Kernel.Name):
		return fmt.Errorf("language %q: kernel %q is not built in (the programs are the files of internal/wire/programs)", l.Name, l.Kernel.Name)
	}
	for _, a := range l.Architectures {
		if !slices.Contains(KnownArchitectures, a) {
			return fmt.Errorf("language %q: unknown architecture %q in architectures (known: %s)", l.Name, a, strings.Join(KnownArchitectures, ", "))
		}
	}
	if (len(l.Architectures) > 0) != (l.ArchitecturesReason != "") {
		return fmt.Errorf("language %q: architectures and architectures_reason go together: the reason is what a run elsewhere says (see crystal's)", l.Name)
	}
	if l.Entry != "" && !entry.Known(l.Entry) {
		return fmt.Errorf("language %q: unknown entry convention %q (known: %s)", l.Name, l.Entry, strings.Join(entry.Names(), ", "))
	}
	if l.Entry == "" && slices.ContainsFunc(append(slices.Clone(l.Compile), l.Run...), func(a string) bool {
		return slices.ContainsFunc(entry.Placeholders, func(p string) bool { return strings.Contains(a, p) })
	}) {
		return fmt.Errorf("language %q: %s in its commands need an entry convention to fill them", l.Name, strings.Join(entry.Placeholders, ", "))
	}
	if te := l.TypeErrors; te != nil {
		if _, err := regexp.Compile(te.Pattern); err != nil || te.Pattern == "" || !strings.Contains(te.FatalEnv, "=") || !l.Compiled() {
			return fmt.Errorf("language %q: type_errors needs a compile command, a valid pattern and a NAME=value fatal_env", l.Name)
		}
	}
	if _, ok := r.images[l.Image]; !ok {
		return fmt.Errorf("language %q uses unknown image %q", l.Name, l.Image)
	}
	if _, ok := r.managers[l.Packages]; l.Packages != "" && !ok {
		return fmt.Errorf("language %q: unknown package manager %q (the package_managers are %s)", l.Name, l.Packages, strings.Join(slices.Sorted(maps.Keys(r.managers)), ", "))
	}
	return nil
}

// checkRoles checks that the roles name languages of the registry.
func (r *Registry) checkRoles(roles Roles) error {
	named := append(slices.Clone(roles.Probe), roles.Shell, roles.Load)
	if roles.ExampleCall != nil {
		named = append(named, roles.ExampleCall.Language)
	}
	if roles.SessionState != nil {
		named = append(named, roles.SessionState.Language)
	}
	for _, name := range named {
		if _, ok := r.Lookup(name); name != "" && !ok {
			return fmt.Errorf("roles: unknown language %q", name)
		}
	}
	return nil
}

// validManager checks a package manager's entry.
func validManager(m PackageManager) error {
	switch {
	case m.Name == "":
		return errors.New("package manager: name is required")
	case m.RegistrySetting == "" || len(m.Install) == 0:
		return fmt.Errorf("package manager %q: registry_setting and install are required", m.Name)
	case m.Dir == "" || m.Dir != filepath.Base(m.Dir) || m.Dir == "." || m.Dir == "..":
		return fmt.Errorf("package manager %q: dir must be a plain directory name", m.Name)
	case !slices.Contains(PackageListings, m.Listing):
		return fmt.Errorf("package manager %q: unknown listing %q (known: %s)", m.Name, m.Listing, strings.Join(PackageListings, ", "))
	}
	return nil
}

// File returns a copy of the registry's contents.
func (r *Registry) File() File {
	f := File{Roles: r.roles, Languages: slices.Clone(r.languages)}
	for _, name := range slices.Sorted(maps.Keys(r.managers)) {
		f.PackageManagers = append(f.PackageManagers, r.managers[name])
	}
	for _, img := range r.images {
		f.Images = append(f.Images, img)
	}
	sort.Slice(f.Images, func(i, j int) bool { return f.Images[i].Name < f.Images[j].Name })
	return f
}

// Lookup finds a language by name or alias, case-insensitively.
func (r *Registry) Lookup(name string) (Language, bool) {
	r.lookups.Add(1)
	i, ok := r.byName[strings.ToLower(strings.TrimSpace(name))]
	if !ok {
		return Language{}, false
	}
	return r.languages[i], true
}

// Lookups is how many times Lookup has run. A tool call resolves its
// language once (engine.Prepare), and tests hold its callers to that.
func (r *Registry) Lookups() int64 { return r.lookups.Load() }

// Languages returns every language, sorted by name.
func (r *Registry) Languages() []Language { return slices.Clone(r.languages) }

// Names returns the canonical names of every language, sorted.
func (r *Registry) Names() []string {
	names := make([]string, len(r.languages))
	for i, l := range r.languages {
		names[i] = l.Name
	}
	return names
}

// PackageManager returns the package manager of lang, if it takes packages.
func (r *Registry) PackageManager(lang Language) (PackageManager, bool) {
	m, ok := r.managers[lang.Packages]
	return m, ok && lang.Packages != ""
}

// PackageManagers returns every package manager, sorted by name.
func (r *Registry) PackageManagers() []PackageManager {
	return r.File().PackageManagers
}

// Roles returns the languages the project's tools use when the user names
// none.
func (r *Registry) Roles() Roles { return r.roles }

// Image returns the image with the given short name.
func (r *Registry) Image(name string) (Image, bool) {
	img, ok := r.images[name]
	return img, ok
}

// Optional reports whether img is a variant image that no language runs in:
// one that is built only when asked for, and whose absence is no fault.
func (r *Registry) Optional(img Image) bool {
	return img.VariantOf != "" && !slices.ContainsFunc(r.languages, func(l Language) bool { return l.Image == img.Name })
}

// Default reports whether img is in the default set, the images that
// `images build` with no names (and so `make images` and `make run`) builds:
// every image that is neither optional nor on demand.
func (r *Registry) Default(img Image) bool {
	return !r.Optional(img) && !img.OnDemand
}

// LanguagesOf returns the languages measured in the named image when it is
// built: those that run in it, or, for a variant, those of the image it is
// a variant of.
func (r *Registry) LanguagesOf(image string) []Language {
	img := r.images[image]
	var out []Language
	for _, l := range r.languages {
		if l.Image == image || (img.VariantOf != "" && l.Image == img.VariantOf) {
			out = append(out, l)
		}
	}
	return out
}

// ImageOf returns the image a language runs in.
func (r *Registry) ImageOf(l Language) Image { return r.images[l.Image] }

// Images returns every image, in build order (each after the one it builds on).
func (r *Registry) Images() []Image {
	var out []Image
	done := map[string]bool{"root": true}
	names := make([]string, 0, len(r.images))
	for n := range r.images {
		names = append(names, n)
	}
	sort.Strings(names)
	for len(out) < len(r.images) {
		progressed := false
		for _, n := range names {
			img := r.images[n]
			if !done[n] && done[img.From] {
				out = append(out, img)
				done[n] = true
				progressed = true
			}
		}
		if !progressed {
			break // a cycle; New rejects unknown parents, cycles stay unbuilt
		}
	}
	return out
}

// legacyWarm and legacyKernel are the program names registries used before
// they named the program's file; a registry file written then still loads.
var (
	legacyWarm   = map[string]string{"python": "python_warm.py", "node": "node_warm.cjs"}
	legacyKernel = map[string]string{"python": "python_kernel.py", "javascript": "javascript_kernel.js"}
)

// programFiles names the warm and kernel programs of a language by their
// files, as [wire.Program] reads them, when a registry names them the old way.
func programFiles(w *WarmInterpreter, k *Kernel) (*WarmInterpreter, *Kernel) {
	if w != nil {
		if file, ok := legacyWarm[w.Name]; ok {
			w = &WarmInterpreter{Name: file, Run: w.Run}
		}
	}
	if k != nil {
		if file, ok := legacyKernel[k.Name]; ok {
			k = &Kernel{Name: file, Run: k.Run, Fork: k.Fork}
		}
	}
	return w, k
}
