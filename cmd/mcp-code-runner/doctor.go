package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/moby/moby/client"
	"github.com/spf13/cobra"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/kubernetes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

func init() { subcommands = append(subcommands, newDoctorCmd) }

// minAPIVersion is the oldest Docker API the backend is tested with
// (Debian's Docker Engine 20.10).
const minAPIVersion = "1.41"

func newDoctorCmd(g *globalOptions) *cobra.Command {
	var noSmoke bool
	cmd := &cobra.Command{
		Use:   "doctor",
		Short: "Check Docker, the images and the sandbox, and say how to fix each problem",
		Long: `Doctor checks everything a run needs: the configuration, the Docker daemon
and its API version, the agent binary, every runtime image, left-behind
sandbox containers, and (unless --no-smoke) one real hardened run. Each
problem comes with the command that fixes it. It exits non-zero when
anything is wrong.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			d := &doctor{w: os.Stdout}
			d.run(cmd.Context(), g, !noSmoke)
			if d.failed > 0 {
				return fmt.Errorf("%d problem(s) found; fix them as said above", d.failed)
			}
			fmt.Fprintln(d.w, "\nall checks passed")
			return nil
		},
	}
	cmd.Flags().BoolVar(&noSmoke, "no-smoke", false, "skip the test run in a sandbox")
	g.addSettingFlags(cmd)
	return cmd
}

type doctor struct {
	w      io.Writer
	failed int
}

func (d *doctor) ok(format string, args ...any) { fmt.Fprintf(d.w, "ok    "+format+"\n", args...) }

func (d *doctor) fail(fix string, format string, args ...any) {
	d.failed++
	fmt.Fprintf(d.w, "FAIL  "+format+"\n", args...)
	fmt.Fprintf(d.w, "      fix: %s\n", fix)
}

func (d *doctor) info(format string, args ...any) { fmt.Fprintf(d.w, "info  "+format+"\n", args...) }

func (d *doctor) warn(format string, args ...any) { fmt.Fprintf(d.w, "warn  "+format+"\n", args...) }

func (d *doctor) run(ctx context.Context, g *globalOptions, smoke bool) {
	cfg, reg, err := g.load()
	if err != nil {
		d.fail("correct the configuration file or MCR_* variables", "configuration: %v", err)
		return
	}
	d.ok("configuration valid (%d languages, %d images)", len(reg.Languages()), len(reg.Images()))
	d.store(cfg)
	d.checkpoint(cfg)

	st, err := newStack(g)
	if err != nil {
		d.fail("build the binary with `make build` (static, CGO_ENABLED=0), or set agent_path", "sandbox backend: %v", err)
		return
	}
	defer st.Close()
	defer waitForRemovals(ctx, st)
	d.ok("backend: %s", st.backendChoice)
	if kb, ok := st.backend.(*kubernetes.Backend); ok {
		d.kubernetes(ctx, kb)
		return
	}
	if cb, ok := st.backend.(*crun.Backend); ok {
		d.crun(ctx, st, reg, cb, smoke)
		return
	}
	db, err := st.dockerBackend()
	if err != nil {
		d.fail("use the Docker backend", "sandbox backend: %v", err)
		return
	}
	d.ok("agent binary %s is static", db.AgentPath())
	if !d.dockerDaemon(ctx, st) {
		return
	}
	vctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	d.delivery(vctx, db)
	d.dockerEngine(vctx, db)
	d.gvisor(vctx, st)
	missing := d.images(vctx, st, reg)
	d.runtimeVersions(vctx, st, reg)
	sandboxes, listed := d.leftovers(vctx, db.Client(), cfg)
	d.warmPool(cfg, st, reg)
	if listed {
		d.runningByPurpose(sandboxes)
	}
	if smoke && missing == 0 {
		d.smoke(ctx, st, reg)
	}
}

// dockerDaemon checks that the daemon answers and can make this server's
// sandboxes, saying how to fix it when not.
func (d *doctor) dockerDaemon(ctx context.Context, st *stack) bool {
	if err := st.backend.Check(ctx); err != nil {
		if errors.Is(err, docker.ErrRuntimeMissing) {
			d.fail("register the runtime with the daemon, or set runtime to \"auto\" (crun when registered, else the daemon's default)", "OCI runtime: %v", err)
			return false
		}
		if errors.Is(err, dockerengine.ErrLimitsUnenforced) {
			d.fail("use a rootful engine, or a rootless one on a cgroup v2 host with systemd (docs/SECURITY.md#rootless-docker)", "resource limits: %v", err)
			return false
		}
		if errors.Is(err, dockerengine.ErrSocketPermission) {
			d.fail("give this user the socket's group (`sudo usermod -aG docker $USER`, then log in again), or use a daemon of its own", "Docker daemon: %v", err)
			return false
		}
		d.fail("start Docker: `make docker` (installs docker.io and starts dockerd), `systemctl start docker`, or `dockerd &`", "Docker daemon: %v", err)
		return false
	}
	return true
}

// dockerEngine reports the daemon's version, its engine and the limits it
// cannot set, and the OCI runtime sandboxes run under.
func (d *doctor) dockerEngine(vctx context.Context, db *docker.Backend) {
	cli := db.Client()
	if v, err := cli.ServerVersion(vctx, client.ServerVersionOptions{}); err == nil {
		if versionLess(v.APIVersion, minAPIVersion) {
			d.fail("upgrade Docker Engine to 20.10 or newer", "Docker %s speaks API %s, older than %s", v.Version, v.APIVersion, minAPIVersion)
		} else {
			d.ok("Docker %s reachable at %s (API %s, client negotiated %s)", v.Version, cli.DaemonHost(), v.APIVersion, cli.ClientVersion())
			if e, err := db.Engine(vctx); err == nil {
				d.ok("engine: %s", e)
				for _, limit := range e.Limits() {
					d.warn("on %s, %s (docs/SECURITY.md)", e.Kind, limit)
				}
				if len(e.Unenforced) > 0 {
					d.warn("sandboxes run WITHOUT the %s limits: this engine cannot set them and allow_unenforced_limits is on; run only code you trust (docs/SECURITY.md#rootless-docker)", strings.Join(e.Unenforced, ", "))
				}
			}
		}
	}
	if rt, err := db.Runtime(vctx); err == nil {
		d.ok("OCI runtime in use: %s (%s; registered: %s)", rt.Effective, rt.Reason, strings.Join(rt.Registered, ", "))
	}
}

// images reports each runtime image and returns how many that runs need
// are missing.
func (d *doctor) images(vctx context.Context, st *stack, reg *languages.Registry) int {
	missing := 0
	for _, img := range reg.Images() {
		err := st.backend.CheckImage(vctx, img.Tag)
		switch {
		case err == nil:
			d.ok("image %s present", img.Tag)
		case errors.Is(err, docker.ErrImagePlatform):
			missing++
			d.fail("mcp-code-runner images build "+img.Name, "%v", err)
		case reg.Optional(img):
			d.ok("optional image %s not built (build it with `mcp-code-runner images build %s` when wanted)", img.Tag, img.Name)
		case img.OnDemand:
			d.ok("on-demand image %s not built, so %s cannot run until it is (`mcp-code-runner images build %s`, or `images build --all`)",
				img.Tag, strings.Join(languageNames(reg.LanguagesOf(img.Name)), ", "), img.Name)
		default:
			missing++
			d.fail("mcp-code-runner images build "+img.Name+"   (or `make images` for all)", "image %s missing", img.Tag)
		}
	}
	return missing
}

// runtimeVersions reports each language's runtime version, or why it has
// none here.
func (d *doctor) runtimeVersions(vctx context.Context, st *stack, reg *languages.Registry) {
	arch := st.backend.Architecture(vctx)
	for _, l := range reg.Languages() {
		if arch != "" && !l.RunsOn(arch) {
			// Its image is built without it (or its programs are another
			// machine's code), so it has no version here to report.
			d.ok("%-12s not available: %s (the sandboxes here are linux/%s)", l.Name, l.ArchitectureRefusal(), arch)
			continue
		}
		if v := st.engine.Runtime(vctx, l).Version; v != "" {
			d.ok("%-12s %s", l.Name, v)
		} else if st.backend.CheckImage(vctx, reg.ImageOf(l).Tag) == nil {
			d.warn("%s: image has no runtime version label; rebuild with `mcp-code-runner images build --force %s`", l.Name, l.Name)
		}
	}
}

// leftovers reports the sandbox containers that exist now and returns
// them (listed false when the daemon did not list them).
func (d *doctor) leftovers(vctx context.Context, cli *client.Client, cfg config.Config) (sandboxes client.ContainerListResult, listed bool) {
	list, err := dockerengine.ListContainers(vctx, cli, client.ContainerListOptions{All: true, Filters: make(client.Filters).Add("label", docker.LabelManaged+"=true")})
	if err == nil {
		if n := len(list.Items); n > 0 {
			d.warn("%d sandbox container(s) exist now (runs in flight, or left by a dead server; `serve` removes orphans at start and every %ds)", n, cfg.SweepIntervalSeconds)
		} else {
			d.ok("no sandbox containers left behind")
		}
	}
	return list, err == nil
}

// warmPool reports the warm pool's configured sizes, what starts ahead, and
// whether it can grow on this host now.
func (d *doctor) warmPool(cfg config.Config, st *stack, reg *languages.Registry) {
	var sizes, ahead, blocked []string
	canGrow := pool.HostHeadroom(cfg.Pool.ReserveMemoryMB, cfg.Pool.ReservePids)
	for _, l := range reg.Languages() {
		n, most := cfg.Pool.SizeFor(l.Name), cfg.Pool.MaxSizeFor(l.Name)
		if n > 0 && most > n {
			sizes = append(sizes, fmt.Sprintf("%s=%d..%d", l.Name, n, most))
			if err := canGrow(st.engine.Template(l)); err != nil {
				blocked = append(blocked, fmt.Sprintf("%s: %v", l.Name, err))
			}
		} else {
			sizes = append(sizes, fmt.Sprintf("%s=%d", l.Name, n))
		}
		switch {
		case n > 0 && l.Warm != nil:
			ahead = append(ahead, l.Name+" (interpreter)")
		case n > 0 && len(l.Prestart) > 0:
			ahead = append(ahead, l.Name+" (compiler)")
		}
	}
	d.ok("warm pool configured: %s (0 means cold path; N..M grows from N idle sandboxes toward M while runs wait; `serve` logs the pool's state as it changes)", strings.Join(sizes, " "))
	for _, b := range blocked {
		d.warn("warm pool cannot grow on this host now, and stays at its size when runs wait: %s", b)
	}
	if len(ahead) > 0 {
		d.ok("warm sandboxes start their runtime before the job for: %s", strings.Join(ahead, ", "))
	}
}

// runningByPurpose reports the running sandboxes by their purpose.
func (d *doctor) runningByPurpose(list client.ContainerListResult) {
	byPurpose := map[string]int{}
	for _, c := range list.Items {
		if c.State == "running" {
			byPurpose[c.Labels[docker.LabelPurpose]]++
		}
	}
	if len(byPurpose) > 0 {
		d.ok("running sandboxes by language (warm pools of live servers, and runs in flight): %v", byPurpose)
	}
}

// smoke runs a hello world in each of the registry's probe languages.
func (d *doctor) smoke(ctx context.Context, st *stack, reg *languages.Registry) {
	for _, name := range reg.Roles().Probe {
		l, ok := reg.Lookup(name)
		if !ok {
			continue
		}
		msg, err := smokeRun(ctx, st, l)
		if err != nil {
			if se, ok := errors.AsType[*smokeError](err); ok {
				d.fail(se.fix, "%s", se.problem)
			} else {
				d.fail("see the message", "test run (%s): %v", name, err)
			}
			continue
		}
		d.ok("%s", msg)
	}
}

// smokeError is a failed test run: what went wrong and how to fix it.
type smokeError struct{ problem, fix string }

func (e *smokeError) Error() string { return e.problem + "; fix: " + e.fix }

// waitForRemovals waits until the sandboxes this command made are removed:
// a run answers before its sandbox is, and a command that exits first would
// leave it to the next server's sweep.
func waitForRemovals(ctx context.Context, st *stack) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	_ = st.engine.Close(wctx)
	_, _ = st.backend.RemoveOwn(wctx, "")
}

// smokeRun runs l's test program in a real hardened sandbox and returns a
// line that says what it printed, or a *smokeError.
func smokeRun(ctx context.Context, st *stack, l languages.Language) (string, error) {
	// The registry's probe shows that the sandbox runs as a non-root user
	// without network; a language without one runs its example.
	code := cmp.Or(l.Probe, l.Example)
	if code == "" {
		return "", &smokeError{fmt.Sprintf("test run (%s): the language has no example program", l.Name), "add \"example\" to its registry entry"}
	}
	start := time.Now()
	res, err := st.engine.Run(ctx, engine.Request{Language: l.Name, Code: code}, engine.RunOptions{})
	switch {
	case err != nil:
		return "", &smokeError{fmt.Sprintf("test run (%s): %v", l.Name, err), "see the message; `docker info` and the daemon log help"}
	case res.Status != engine.StatusOK:
		return "", &smokeError{fmt.Sprintf("test run (%s): status %s, stderr: %s", l.Name, res.Status, res.Stderr),
			"see the output above; the image may be broken: `mcp-code-runner images build --force " + l.Name + "`"}
	}
	return fmt.Sprintf("test run (%s) in a hardened sandbox: %s (%d ms)", l.Name, trimOutput(res.Stdout), time.Since(start).Milliseconds()), nil
}

func trimOutput(s string) string {
	if len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	return s
}

// versionLess compares dotted API versions like "1.41".
func versionLess(a, b string) bool {
	var a1, a2, b1, b2 int
	// A version that does not parse compares as 0.0, the oldest.
	_, _ = fmt.Sscanf(a, "%d.%d", &a1, &a2)
	_, _ = fmt.Sscanf(b, "%d.%d", &b1, &b2)
	return a1 < b1 || (a1 == b1 && a2 < b2)
}

// kubernetes checks the kubernetes backend: the API server and this
// server's permissions in the sandbox namespace. The images live on the
// nodes, which the API server does not list.
func (d *doctor) kubernetes(ctx context.Context, kb *kubernetes.Backend) {
	o := kb.PodOptions()
	if err := kb.Check(ctx); err != nil {
		d.fail("check the kubeconfig and context (--kubernetes-kubeconfig, --kubernetes-context), and apply deploy/kubernetes for the namespace and the Role", "Kubernetes: %v", err)
		return
	}
	d.ok("Kubernetes API server reachable; this server may create, attach to and delete pods in namespace %s", o.Namespace)
	d.ok("sandbox pods run the agent from image %s (an init container copies it; the runtime images must be on the nodes or in a registry they pull from)", o.AgentImage)
}

// crun checks the crun backend: crun, root, the Docker daemon whose images
// it runs, the images, and (with smoke) a hello world in a real sandbox.
func (d *doctor) crun(ctx context.Context, st *stack, reg *languages.Registry, cb *crun.Backend, smoke bool) {
	if err := cb.Check(ctx); err != nil {
		d.fail("run the server as root beside a local Docker daemon with the overlay2 storage driver and crun installed (`make docker`), or use the docker backend", "crun backend: %v", err)
		return
	}
	d.ok("crun backend: %s starts the sandboxes itself (network tiers through each sandbox's egress socket; images from Docker at %s)", cb.Binary(), cb.Client().DaemonHost())
	missing := 0
	for _, img := range reg.Images() {
		if err := cb.CheckImage(ctx, img.Tag); err == nil {
			d.ok("image %s present", img.Tag)
		} else if !img.OnDemand && !reg.Optional(img) {
			missing++
			d.fail("mcp-code-runner images build "+img.Name+"   (or `make images` for all)", "image %s: %v", img.Tag, err)
		}
	}
	if !smoke || missing > 0 {
		return
	}
	for _, name := range reg.Roles().Probe {
		if l, ok := reg.Lookup(name); ok {
			if msg, err := smokeRun(ctx, st, l); err != nil {
				d.fail("see the message", "%v", err)
			} else {
				d.ok("%s", msg)
			}
		}
	}
}

// delivery says how the agent gets into sandboxes and how the server
// reaches it, and why.
func (d *doctor) delivery(ctx context.Context, db *docker.Backend) {
	dl, err := db.Delivery(ctx)
	if err != nil {
		d.fail("see the message; agent_delivery (MCR_AGENT_DELIVERY) is auto, bind or volume", "agent delivery: %v", err)
		return
	}
	how := "bind-mounted from " + db.AgentPath()
	if dl.Mode == docker.DeliveryVolume {
		how = "in the read-only volume " + dl.Volume + " (filled through the Docker API)"
	}
	channel := "the containers' attached streams"
	if dl.Sockets {
		channel = "per-sandbox Unix sockets in " + os.TempDir() + " (the attached streams where a socket cannot reach the sandbox)"
	}
	d.ok("agent for %s %s; agents reached over %s (%s)", dl.Platform, how, channel, dl.Reason)
}

// languageNames returns the names of langs.
func languageNames(langs []languages.Language) []string {
	names := make([]string, len(langs))
	for i, l := range langs {
		names[i] = l.Name
	}
	return names
}

// store checks the configured state store the way serve opens it. An
// embedded store held by a running server is fine: that server owns it.
func (d *doctor) store(cfg config.Config) {
	s, err := store.Open(cfg)
	switch {
	case errors.Is(err, store.ErrDataDirInUse):
		d.ok("state store: %v (so a server is running on it)", err)
	case errors.Is(err, store.ErrNotStateStore):
		d.fail("move the file away (it is left untouched), or set data_dir to another directory", "state store: %v", err)
	case errors.Is(err, store.ErrUnavailable):
		d.fail("start etcd, or correct store.etcd.endpoints and its TLS and auth settings", "state store: %v", err)
	case err != nil:
		d.fail("correct data_dir or the store settings", "state store: %v", err)
	default:
		d.ok("state store: %s", s.Describe())
		_ = s.Close()
	}
}
