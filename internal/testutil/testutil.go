// Package testutil gives tests the real Docker backend: a static agent
// binary, a client, and the rule that tests needing Docker fail (never skip)
// when CI=true and Docker is unreachable.
package testutil

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
)

var (
	buildOnce sync.Once
	serverBin string
	agentBin  string
	buildErr  error
)

// AgentName is the standalone agent binary's file name; the server mounts
// the one beside its own executable into every sandbox.
const AgentName = "mcp-code-runner-agent"

// ServerBinary returns a static build of the server binary: MCR_TEST_BINARY
// when set (make test-go sets it), else a fresh build with the agent beside it.
func ServerBinary(t testing.TB) string {
	t.Helper()
	build(t)
	return serverBin
}

// AgentBinary returns the static agent binary mounted into sandboxes: the
// one beside ServerBinary (make build puts it there), else the server
// binary itself (its hidden agent subcommand).
func AgentBinary(t testing.TB) string {
	t.Helper()
	build(t)
	return agentBin
}

func build(t testing.TB) {
	t.Helper()
	buildOnce.Do(func() {
		if p := os.Getenv("MCR_TEST_BINARY"); p != "" {
			serverBin, agentBin = p, p
			if a := filepath.Join(filepath.Dir(p), AgentName); isFile(a) {
				agentBin = a
			}
			return
		}
		removeStaleBuilds()
		dir, err := os.MkdirTemp("", fmt.Sprintf("mcr-bin-%d-", os.Getpid()))
		if err != nil {
			buildErr = err
			return
		}
		serverBin = filepath.Join(dir, "mcp-code-runner")
		agentBin = filepath.Join(dir, AgentName)
		for out, pkg := range map[string]string{serverBin: "cmd/mcp-code-runner", agentBin: "cmd/" + AgentName} {
			cmd := exec.Command("go", "build", "-o", out, "github.com/mcp-code-runner/mcp-code-runner/"+pkg)
			cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
			if b, err := cmd.CombinedOutput(); err != nil {
				buildErr = &buildError{out: string(b), err: err}
				return
			}
		}
	})
	if buildErr != nil {
		t.Fatalf("building the binaries: %v", buildErr)
	}
}

// removeStaleBuilds deletes the binaries that test processes no longer
// running built: each test binary builds its own copy once and cannot tell
// when its last test has used it, so the next build sweeps.
func removeStaleBuilds() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), "mcr-bin-*"))
	for _, d := range dirs {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(d), "mcr-bin-%d-", &pid); err != nil || pid <= 0 {
			// A directory from before builds were named by process.
			_ = os.RemoveAll(d)
			continue
		}
		if p, err := os.FindProcess(pid); err == nil && p.Signal(syscall.Signal(0)) == nil {
			continue
		}
		_ = os.RemoveAll(d)
	}
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return e.err.Error() + "\n" + e.out }

// RequireDocker returns a Docker client, or skips the test when Docker is
// unreachable, except under CI=true, where it fails.
func RequireDocker(t testing.TB) *client.Client {
	t.Helper()
	cli, err := dockerengine.NewClient("")
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = dockerengine.Ping(ctx, cli)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("Docker is required and unreachable under CI=true: %v", err)
		}
		t.Skipf("Docker unreachable (set CI=true to make this fail): %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// RuntimeEnv names the OCI runtime the Docker suites run sandboxes under
// ("" or "auto": crun when the daemon has it); make test runs the hostile
// battery and the language matrix a second time with it set to runc.
const RuntimeEnv = "MCR_TEST_RUNTIME"

// AllowUnenforcedLimitsEnv, set to true, lets Backend run on an engine that
// cannot set the resource limits (a rootless engine on cgroup v1), as the
// server's allow_unenforced_limits does: the battery then shows which of its
// controls still hold there.
const AllowUnenforcedLimitsEnv = "MCR_ALLOW_UNENFORCED_LIMITS"

// Backend returns the real Docker backend, under the runtime RuntimeEnv names.
func Backend(t testing.TB) *docker.Backend {
	t.Helper()
	cli := RequireDocker(t)
	b, err := docker.New(cli, docker.Options{AgentPath: AgentBinary(t), Runtime: os.Getenv(RuntimeEnv),
		AllowUnenforcedLimits: os.Getenv(AllowUnenforcedLimitsEnv) == "true"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// RequireImage skips (or under CI fails) when a language's image is missing.
func RequireImage(t testing.TB, b *docker.Backend, reg *languages.Registry, lang string) {
	t.Helper()
	l, ok := reg.Lookup(lang)
	if !ok {
		t.Fatalf("unknown language %s", lang)
	}
	img := reg.ImageOf(l)
	fix := "make images"
	if img.OnDemand {
		fix = "make images-all" // `make images` leaves on-demand images out
	}
	if err := b.CheckImage(context.Background(), img.Tag); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("image %s is required under CI=true: %v (run `%s`)", img.Tag, err, fix)
		}
		t.Skipf("image %s missing (run `%s`): %v", img.Tag, fix, err)
	}
}

// Engine returns an engine on the real Docker backend with cfg (Default()
// when nil), the built-in registry and opts.
func Engine(t testing.TB, cfg *config.Config, opts ...engine.Option) (*engine.Engine, *docker.Backend) {
	t.Helper()
	c := config.Default()
	if cfg != nil {
		c = *cfg
	}
	// MCR_TEST_ISOLATION (testbackend.IsolationEnv): gvisor runs the
	// sandboxes under the daemon's runsc.
	if i := os.Getenv("MCR_TEST_ISOLATION"); i != "" {
		c.Isolation = i
	}
	b := Backend(t)
	reg := languages.Builtin()
	opts = append([]engine.Option{engine.WithRuntimeVersions(images.NewLocalVersions(b.Client(), reg))}, opts...)
	return engine.New(c, reg, b, nil, opts...), b
}

// NoLeftovers fails the test if any container of this process remains.
func NoLeftovers(t testing.TB, cli *client.Client) {
	t.Helper()
	// A run answers before its sandbox is removed (within a second here);
	// only a container still there after the grace is left behind.
	var n int
	var listErr error
	if !WaitFor(leftoverGrace, func() bool {
		list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
			All:     true,
			Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid())),
		})
		n, listErr = len(list.Items), err
		return err != nil || n == 0
	}) {
		t.Errorf("%d sandbox container(s) left behind %s after the runs", n, leftoverGrace)
	}
	if listErr != nil {
		t.Fatalf("listing containers: %v", listErr)
	}
}

// leftoverGrace is how long NoLeftovers lets removals in the background
// finish.
const leftoverGrace = 10 * time.Second

// WaitProcessGone waits up to limit until every thread of host process pid
// has exited. A killed multi-threaded process's leader shows as a zombie
// while its other threads still exit, and its descriptors (a socket, say)
// close only with the last of them.
func WaitProcessGone(pid int, limit time.Duration) {
	WaitFor(limit, func() bool { return !processRunning(pid) })
}

func processRunning(pid int) bool {
	tasks, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/task")
	if err != nil || len(tasks) == 0 {
		return false
	}
	if len(tasks) > 1 {
		return true
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i >= 0 && i+2 < len(data) && data[i+2] != 'Z' && data[i+2] != 'X'
}

// RunscEnv names gVisor's runsc for the tests that run sandboxes under it;
// unset, they take the one `make gvisor` installs (DefaultRunsc).
const RunscEnv = "MCR_TEST_RUNSC"

// DefaultRunsc is where scripts/ensure-gvisor.sh installs runsc.
const DefaultRunsc = "/var/lib/mcp-code-runner/gvisor/runsc"

// Runsc returns gVisor's runsc for the tests: it skips the test where
// there is none, and fails it under CI=true, where `make test` installs it.
func Runsc(t testing.TB) string {
	t.Helper()
	path := os.Getenv(RunscEnv)
	if path == "" {
		path = DefaultRunsc
	}
	if !isFile(path) {
		if os.Getenv("CI") == "true" {
			t.Fatalf("gVisor's runsc is required under CI=true and %s is missing (run `make gvisor`)", path)
		}
		t.Skipf("gVisor's runsc %s is missing (run `make gvisor`)", path)
	}
	return path
}

// unsafeInPath are the characters a test's name may hold that a mount's
// options cannot (overlayfs splits its options at commas).
var unsafeInPath = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

// CrunStateDir is a crun backend's state directory of its own for test t,
// under /run, named after the process and the test.
func CrunStateDir(t testing.TB) string {
	return filepath.Join("/run", fmt.Sprintf("mcr-crun-test-%d-%s", os.Getpid(), unsafeInPath.ReplaceAllString(t.Name(), "_")))
}
