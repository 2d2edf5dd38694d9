//go:build !fast

package containment_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/images"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// backendEnv names the sandbox backend the battery runs on (testbackend.Env).
const backendEnv = testbackend.Env

// onCrun says the battery runs on the crun backend.
func onCrun() bool { return testbackend.OnCrun() }

// hostView is how the battery sees this process's sandboxes from the host,
// on the backend it runs on.
type hostView interface {
	// running lists the IDs of this process's running sandboxes.
	running(ctx context.Context) ([]string, error)
	// firstPID is the host PID of a sandbox's first process, the agent.
	firstPID(ctx context.Context, id string) (int, error)
	// config is the sandbox's configuration as its backend holds it.
	config(ctx context.Context, id string) (string, error)
	// pids reads the pids counters of the cgroup a sandbox's tasks are
	// in: how many there are, the limit and the forks it refused; ok is
	// false when they are not visible from here.
	pids(ctx context.Context, id string) (counters pidsCounters, ok bool)
	// created counts the sandboxes created between since and until.
	created(t *testing.T, since, until time.Time) int
	// checkNoLeftovers fails the test if a sandbox of this process
	// remains after a grace, says what each one is, and removes them so
	// that later tests start clean.
	checkNoLeftovers(t *testing.T)
}

// engineOn returns an engine with cfg on the battery's backend, the
// Docker backend (for the images, whichever backend runs the sandboxes),
// and the view of the sandboxes from the host.
func engineOn(t *testing.T, cfg *config.Config) (*engine.Engine, *docker.Backend, hostView) {
	t.Helper()
	switch name := testbackend.RequireName(t); name {
	case "", config.BackendDocker:
		e, b := testutil.Engine(t, cfg)
		return e, b, dockerView{b: b}
	case config.BackendCrun:
		db := testutil.Backend(t)
		cb, state := testbackend.Crun(t)
		v := &crunView{b: cb, state: state}
		if testbackend.OnGVisor() {
			v.runsc = testutil.Runsc(t)
		}
		reg := languages.Builtin()
		e := engine.New(*cfg, reg, &countingBackend{Backend: cb, v: v}, nil,
			engine.WithRuntimeVersions(images.NewLocalVersions(db.Client(), reg)))
		return e, db, v
	default:
		t.Fatalf("%s=%q: want docker or crun", backendEnv, name)
		return nil, nil, nil
	}
}

// dockerView sees sandboxes through the Docker API.
type dockerView struct{ b *docker.Backend }

func ownLabel() client.Filters {
	return make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()))
}

func (v dockerView) running(ctx context.Context) ([]string, error) {
	list, err := dockerengine.ListContainers(ctx, v.b.Client(), client.ContainerListOptions{Filters: ownLabel()})
	if err != nil {
		return nil, fmt.Errorf("listing containers: %w", err)
	}
	ids := make([]string, 0, len(list.Items))
	for _, c := range list.Items {
		ids = append(ids, c.ID)
	}
	return ids, nil
}

func (v dockerView) firstPID(ctx context.Context, id string) (int, error) {
	ins, err := v.b.Client().ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return 0, fmt.Errorf("inspecting %.12s: %w", id, err)
	}
	if ins.Container.State == nil || ins.Container.State.Pid <= 0 {
		return 0, fmt.Errorf("container %.12s has no running first process", id)
	}
	return ins.Container.State.Pid, nil
}

func (v dockerView) config(ctx context.Context, id string) (string, error) {
	ins, err := v.b.Client().ContainerInspect(ctx, id, client.ContainerInspectOptions{})
	if err != nil {
		return "", err
	}
	b, _ := json.Marshal(ins.Container)
	return string(b), nil
}

func (v dockerView) pids(_ context.Context, id string) (pidsCounters, bool) {
	return hostPids("/sys/fs/cgroup/pids/docker/"+id, "/sys/fs/cgroup/docker/"+id, "/sys/fs/cgroup/system.slice/docker-"+id+".scope")
}

func (v dockerView) created(t *testing.T, since, until time.Time) int {
	return containersCreated(t, v.b, since, until)
}

func (v dockerView) checkNoLeftovers(t *testing.T) { checkNoLeftovers(t, v.b.Client()) }

// crunView sees sandboxes through crun's state and the backend's bundles,
// and, under gVisor, through runsc's state: a gVisor sandbox is runsc's
// container, not crun's.
type crunView struct {
	b     *crun.Backend
	state string
	runsc string // gVisor's runsc, under gVisor
	mu    sync.Mutex
	made  []time.Time     // when each sandbox was created
	hosts map[string]bool // the host names of the sandboxes created
}

// crunContainer is one entry of `crun list --format json`.
type crunContainer struct {
	ID     string `json:"id"`
	PID    int    `json:"pid"`
	Status string `json:"status"`
}

// list lists this process's containers of crun and, under gVisor, of
// runsc. A runsc container's PID is its sandbox's first host process,
// gVisor's Sentry.
func (v *crunView) list(ctx context.Context) ([]crunContainer, error) {
	list, err := listContainers(ctx, v.b.Binary(), filepath.Join(v.state, "crun"))
	if err != nil {
		return nil, err
	}
	if v.runsc != "" {
		more, err := listContainers(ctx, v.runsc, v.runscRoot())
		if err != nil {
			return nil, err
		}
		list = append(list, more...)
	}
	own := fmt.Sprintf("mcr-%d-", os.Getpid())
	var mine []crunContainer
	for _, c := range list {
		if strings.HasPrefix(c.ID, own) {
			mine = append(mine, c)
		}
	}
	return mine, nil
}

func (v *crunView) runscRoot() string { return filepath.Join(v.state, "runsc") }

// gvisorExec is the command line of runsc exec running args in gVisor
// sandbox id as root with the capabilities the host's root acts on other
// users' processes and files with: the host's way to reach the sandbox's
// own processes, which from the host are its Sentry's, in its own memory.
func (v *crunView) gvisorExec(id string, args ...string) []string {
	return append([]string{"--root", v.runscRoot(), "exec", "--user", "0:0",
		"--cap", "CAP_SYS_PTRACE", "--cap", "CAP_DAC_OVERRIDE", "--cap", "CAP_DAC_READ_SEARCH", "--cap", "CAP_FOWNER", id}, args...)
}

// inGVisor runs args in gVisor sandbox id (gvisorExec) and returns its
// output.
func (v *crunView) inGVisor(ctx context.Context, id string, args ...string) ([]byte, error) {
	if v.runsc == "" {
		return nil, fmt.Errorf("sandbox %s does not run under gVisor", id)
	}
	cmd := exec.CommandContext(ctx, v.runsc, v.gvisorExec(id, args...)...)
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("runsc exec %s %v: %w", id, args, err)
	}
	return out, nil
}

// gvisorProcesses lists the processes whose command line contains marker
// in this process's running gVisor sandboxes, as "ID PID COMMAND", and the
// sandboxes they run in. A sandbox that starts or ends meanwhile (the
// warm pool's) may not answer: the error says which did not.
func (v *crunView) gvisorProcesses(ctx context.Context, marker string) ([]string, map[string]bool, error) {
	ids, err := v.running(ctx)
	if err != nil {
		return nil, nil, err
	}
	var (
		procs []string
		errs  []error
	)
	in := map[string]bool{}
	for _, id := range ids {
		out, err := v.inGVisor(ctx, id, "bash", "-c", `for p in /proc/[0-9]*; do echo "${p#/proc/} $(tr '\0' ' ' <"$p/cmdline")"; done`)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, l := range lines(string(out)) {
			if strings.Contains(l, marker) {
				procs = append(procs, id+" "+l)
				in[id] = true
			}
		}
	}
	return procs, in, errors.Join(errs...)
}

// gvisorAgentStdout opens, inside gVisor sandbox id, the standard output
// of its agent (gVisor's PID 1), which carries the agent's frames to the
// server, as a subverted agent could write anything there: what is written
// to the returned writer goes there, from a process run by gvisorExec;
// Close waits for that process to end.
func (v *crunView) gvisorAgentStdout(id string) (io.WriteCloser, error) {
	cmd := exec.Command(v.runsc, v.gvisorExec(id, "bash", "-c", "exec cat >/proc/1/fd/1")...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	w, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("runsc exec %s: %w", id, err)
	}
	return &execWriter{WriteCloser: w, cmd: cmd, stderr: &stderr}, nil
}

// execWriter is a process's standard input; closing it waits for the
// process.
type execWriter struct {
	io.WriteCloser
	cmd    *exec.Cmd
	stderr *strings.Builder
}

func (w *execWriter) Close() error {
	_ = w.WriteCloser.Close()
	if err := w.cmd.Wait(); err != nil {
		return fmt.Errorf("%v: %w: %s", w.cmd.Args, err, w.stderr.String())
	}
	return nil
}

// gvisorView is the battery's host view under gVisor, which only the crun
// backend gives it.
func gvisorView(t *testing.T, v hostView) *crunView {
	t.Helper()
	cv, ok := v.(*crunView)
	if !ok || cv.runsc == "" {
		t.Fatalf("under gVisor the battery sees the sandboxes through runsc's state: run it with %s=default or crun", backendEnv)
	}
	return cv
}

// listContainers lists the containers an OCI runtime (crun or runsc) keeps
// in its state directory root; a root not made yet holds none.
func listContainers(ctx context.Context, runtime, root string) ([]crunContainer, error) {
	if _, err := os.Stat(root); os.IsNotExist(err) {
		return nil, nil
	}
	out, err := exec.CommandContext(ctx, runtime, "--root", root, "list", "--format", "json").Output()
	if err != nil {
		return nil, fmt.Errorf("%s list: %w", filepath.Base(runtime), err)
	}
	var list []crunContainer
	if err := json.Unmarshal(out, &list); err != nil {
		return nil, fmt.Errorf("%s list: %w: %q", filepath.Base(runtime), err, out)
	}
	return list, nil
}

func (v *crunView) running(ctx context.Context) ([]string, error) {
	list, err := v.list(ctx)
	if err != nil {
		return nil, err
	}
	var ids []string
	for _, c := range list {
		if c.Status == "running" {
			ids = append(ids, c.ID)
		}
	}
	return ids, nil
}

func (v *crunView) firstPID(ctx context.Context, id string) (int, error) {
	list, err := v.list(ctx)
	if err != nil {
		return 0, err
	}
	for _, c := range list {
		if c.ID == id && c.PID > 0 {
			return c.PID, nil
		}
	}
	return 0, fmt.Errorf("sandbox %s has no running first process", id)
}

func (v *crunView) config(_ context.Context, id string) (string, error) {
	b, err := os.ReadFile(filepath.Join(v.state, "bundles", id, "config.json"))
	return string(b), err
}

// pids reads a container's host cgroup. A gVisor sandbox's host cgroup
// holds gVisor's kernel, whose threads are not the sandbox's tasks: its
// tasks are counted by the pids cgroup gVisor keeps for them, which the
// host reads through runsc (read-control).
func (v *crunView) pids(ctx context.Context, id string) (pidsCounters, bool) {
	if v.runsc == "" {
		return hostPids("/sys/fs/cgroup/pids/mcp-code-runner/"+id, "/sys/fs/cgroup/mcp-code-runner/"+id)
	}
	var c pidsCounters
	for _, f := range []struct {
		name   string
		format string
		into   *int
	}{{"pids.current", "%d", &c.current}, {"pids.max", "%d", &c.max}, {"pids.events", "max %d", &c.refused}} {
		out, err := exec.CommandContext(ctx, v.runsc, "--root", v.runscRoot(), "read-control", id, "pids", "/"+id, f.name).Output()
		if err != nil {
			return c, false
		}
		if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), f.format, f.into); err != nil {
			return c, false
		}
	}
	return c, true
}

// created counts the backend's creations: with no daemon, every one is a
// container crun ran.
func (v *crunView) created(_ *testing.T, since, until time.Time) int {
	v.mu.Lock()
	defer v.mu.Unlock()
	n := 0
	for _, at := range v.made {
		if !at.Before(since) && !at.After(until) {
			n++
		}
	}
	return n
}

// leftovers lists this process's sandboxes in crun's state and the
// bundles left. A listing can fail while crun removes a container (its
// state goes as it is read), so the caller asks again.
func (v *crunView) leftovers() ([]string, error) {
	list, err := v.list(context.Background())
	if err != nil {
		return nil, err
	}
	var left []string
	for _, c := range list {
		left = append(left, c.ID+" "+c.Status)
	}
	entries, _ := os.ReadDir(filepath.Join(v.state, "bundles"))
	for _, e := range entries {
		left = append(left, "bundle "+e.Name())
	}
	// A session's agent log is a tmpfs of its own (crun.agentLogBase).
	mounts, _ := os.ReadFile("/proc/self/mounts")
	for line := range strings.SplitSeq(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 1 && strings.HasPrefix(f[1], "/run/mcr-crun-agent-log/") && ownLog(v, f[1]) {
			left = append(left, "agent log mount "+f[1])
		}
	}
	return left, nil
}

// ownLog says whether the agent log directory dir is one of this
// process's sandboxes': its name is their host names' (the last part of
// their IDs), which the view saw made.
func ownLog(v *crunView, dir string) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.hosts[filepath.Base(dir)]
}

func (v *crunView) checkNoLeftovers(t *testing.T) {
	t.Helper()
	var (
		left []string
		err  error
	)
	if !testutil.WaitFor(30*time.Second, func() bool {
		left, err = v.leftovers()
		return err == nil && len(left) == 0
	}) {
		t.Errorf("crun sandbox(es) left behind after the runs: %v (%v)", left, err)
		_, _ = v.b.RemoveOwn(context.Background(), "")
	}
}

// countingBackend notes when each sandbox is created.
type countingBackend struct {
	*crun.Backend
	v *crunView
}

func (c *countingBackend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	c.v.mu.Lock()
	c.v.made = append(c.v.made, time.Now())
	c.v.mu.Unlock()
	sb, err := c.Backend.Create(ctx, t)
	if err == nil {
		id := sb.ID()
		c.v.mu.Lock()
		if c.v.hosts == nil {
			c.v.hosts = map[string]bool{}
		}
		c.v.hosts[id[strings.LastIndexByte(id, '-')+1:]] = true
		c.v.mu.Unlock()
	}
	return sb, err
}

// sandboxOnHost returns the ID of the one sandbox this test process has
// running and the host PID of its first process, the agent (PID 1 inside).
// The tests run in the host's PID namespace, so that process is visible in
// the host's /proc. It returns an error, not a failure, so that it may run
// on a stream callback's goroutine.
func sandboxOnHost(v hostView) (string, int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ids, err := v.running(ctx)
	if err != nil {
		return "", 0, err
	}
	if len(ids) != 1 {
		return "", 0, fmt.Errorf("want exactly one running sandbox of this process, found %d", len(ids))
	}
	pid, err := v.firstPID(ctx, ids[0])
	if err != nil {
		return "", 0, err
	}
	if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); err != nil {
		return "", 0, fmt.Errorf("%w: process %d: %v", errNoHostView, pid, err)
	}
	return ids[0], pid, nil
}
