//go:build !fast

// Package containment_test is the hostile-code battery: programs that try
// to exhaust, escape or subvert their sandbox, run through the real engine
// on the real Docker daemon. Every test checks that the run comes back with
// a clear result and the right flags, that the engine keeps serving (a
// hello world afterwards succeeds) and that no container is left behind.
//
// The tests run one after another on purpose: the machine has two cores,
// several of them measure the server's heap or time a run, and
// testutil.NoLeftovers looks at every container of this process.
//
// Network rule: nothing here sends a packet anywhere but loopback. The
// network probes read the sandbox's own interface and route tables and
// connect to a closed port on the sandbox's own 127.0.0.1.
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
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/moby/moby/client"
	"golang.org/x/sys/unix"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/docker"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// heapBudget is how much the server's heap may grow while one hostile run
// (or the overload burst) is in flight.
const heapBudget = 100 << 20

// harness is an engine on the real Docker daemon with the checks every
// hostile run shares.
type harness struct {
	t *testing.T
	e harnessEngine
	// b is the Docker backend, which holds the images whichever backend
	// runs the sandboxes; view sees those sandboxes from the host.
	b    *docker.Backend
	view hostView
	cfg  config.Config
	lang string // the language of the follow-up hello world
	// sessions, in restored mode (restored_test.go), runs each program in
	// a restored session's sandbox.
	sessions *sessions.Manager
}

type harnessOption func(*config.Config)

// newHarness returns an engine with the default limits (changed by opts),
// on the cold path: every run creates, uses and removes its own container.
// At the end of the test it runs a hello world in lang (the engine still
// serves) and checks that no container is left.
func newHarness(t *testing.T, lang string, opts ...harnessOption) *harness {
	t.Helper()
	return setup(t, lang, false, opts...)
}

// newPooledHarness is newHarness with the warm pool started; the pool is
// closed (its sandboxes removed) before the leftover check.
func newPooledHarness(t *testing.T, lang string, opts ...harnessOption) *harness {
	t.Helper()
	return setup(t, lang, true, opts...)
}

func setup(t *testing.T, lang string, pooled bool, opts ...harnessOption) *harness {
	t.Helper()
	cfg := config.Default()
	for _, o := range opts {
		o(&cfg)
	}
	if restoredMode() {
		cfg.DataDir = t.TempDir()
	}
	cfg.Isolation = testbackend.Isolation()
	e, b, view := engineOn(t, &cfg)
	testutil.RequireImage(t, b, e.Registry(), lang)
	if lang != "bash" {
		testutil.RequireImage(t, b, e.Registry(), "bash")
	}
	h := &harness{t: t, e: harnessEngine{e}, b: b, view: view, cfg: cfg, lang: lang}
	if restoredMode() {
		h.sessions = restoredSessions(t, e)
	}
	if pooled {
		e.StartPool()
	}
	// Registered after testutil.Engine's own cleanups, so it runs first,
	// while the Docker client is still open.
	t.Cleanup(func() {
		h.followUp()
		if pooled {
			// The pool may still be refilling: closing it with a creation in
			// flight must leave nothing behind either (see also
			// TestPoolCloseRemovesEverySandbox).
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := e.Close(ctx); err != nil {
				t.Errorf("closing the pool: %v", err)
			}
		}
		view.checkNoLeftovers(t)
	})
	return h
}

// checkNoLeftovers fails the test if a container of this process remains
// (testutil.NoLeftovers), says what each one is, then removes them so that
// later tests start clean.
func checkNoLeftovers(t *testing.T, cli *client.Client) {
	t.Helper()
	testutil.NoLeftovers(t, cli)
	for _, c := range describeLeftovers(t, cli) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		_, _ = cli.ContainerRemove(ctx, c, client.ContainerRemoveOptions{Force: true})
		cancel()
	}
}

// describeLeftovers logs the containers of this process that still exist,
// with their state, to tell a leak from a slow removal.
func describeLeftovers(t *testing.T, cli *client.Client) []string {
	t.Helper()
	list, err := dockerengine.ListContainers(context.Background(), cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid())),
	})
	if err != nil {
		return nil
	}
	var ids []string
	for _, c := range list.Items {
		ids = append(ids, c.ID)
		t.Logf("left behind: container %.12s state %s (%s), purpose %s, created %s ago",
			c.ID, c.State, c.Status, c.Labels[docker.LabelPurpose], time.Since(time.Unix(c.Created, 0)).Round(time.Second))
	}
	return ids
}

var helloWorld = map[string]string{
	"python":     "print('hello, world')",
	"bash":       "echo 'hello, world'",
	"javascript": "console.log('hello, world')",
	"typescript": "const s: string = 'hello, world';\nconsole.log(s);",
}

// followUp checks that the engine still serves after the hostile run.
func (h *harness) followUp() {
	t := h.t
	t.Helper()
	for _, lang := range uniq(h.lang, "bash") {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		r, err := h.e.Run(ctx, engine.Request{Language: lang, Code: helloWorld[lang], TimeoutSeconds: 10}, engine.RunOptions{})
		cancel()
		if err != nil {
			t.Errorf("follow-up %s hello world: %v", lang, err)
			continue
		}
		if r.Status != engine.StatusOK || r.Stdout != "hello, world\n" {
			t.Errorf("follow-up %s hello world: status %s stdout %q stderr %q", lang, r.Status, r.Stdout, r.Stderr)
		}
	}
}

func uniq(s ...string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// run runs req and fails the test unless it returns a result (not an
// error) within the bound; the result is checked for consistency and its
// outcome logged.
func (h *harness) run(req engine.Request, within time.Duration) *engine.Result {
	h.t.Helper()
	return h.runWith(req, within, engine.RunOptions{})
}

func (h *harness) runWith(req engine.Request, within time.Duration, opts engine.RunOptions) *engine.Result {
	t := h.t
	t.Helper()
	if req.Language == "" {
		req.Language = h.lang
	}
	ctx, cancel := context.WithTimeout(context.Background(), within+time.Minute)
	defer cancel()
	start := time.Now()
	run := h.e.Run
	if h.sessions != nil {
		run = h.runRestored
	}
	r, err := run(ctx, req, opts)
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Run returned an error after %s (code %s): %v", took, engine.CodeOf(err), err)
	}
	if took > within {
		t.Errorf("the run took %s; it should end within %s", took, within)
	}
	h.checkResult(r)
	t.Logf("OUTCOME %s", outcome(r, took))
	return r
}

// checkResult checks what every result must satisfy, however the run ended.
func (h *harness) checkResult(r *engine.Result) {
	t := h.t
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("result does not encode as JSON: %v", err)
	}
	if !json.Valid(b) || !utf8.Valid(b) {
		t.Errorf("result JSON is not valid UTF-8 JSON")
	}
	switch r.Status {
	case engine.StatusOK, engine.StatusError, engine.StatusCompileError, engine.StatusTimeout, engine.StatusOOM, engine.StatusKilled:
	default:
		t.Errorf("unknown status %q", r.Status)
	}
	if r.TimedOut != (r.Status == engine.StatusTimeout) {
		t.Errorf("timed_out=%v but status %s", r.TimedOut, r.Status)
	}
	if r.Status == engine.StatusOOM && !r.OOMKilled {
		t.Errorf("status oom_killed without oom_killed flag")
	}
	if r.Status != engine.StatusOK && r.Status != engine.StatusError && r.ExitReason == "" && r.Status != engine.StatusCompileError {
		t.Errorf("status %s without a message saying how the run ended", r.Status)
	}
	inline := h.cfg.Limits.InlineOutputBytes + 200 // room for the truncation marker
	if len(r.Stdout) > inline || len(r.Stderr) > inline {
		t.Errorf("inline output over the cap: stdout %d, stderr %d bytes", len(r.Stdout), len(r.Stderr))
	}
	if r.RunID == "" {
		t.Errorf("result has no run_id")
	}
}

func outcome(r *engine.Result, took time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "status=%s exit=%d", r.Status, r.ExitCode)
	if r.Signal != "" {
		fmt.Fprintf(&b, " signal=%s", r.Signal)
	}
	fmt.Fprintf(&b, " timed_out=%v oom_killed=%v stdout_bytes=%d stderr_bytes=%d stdout_truncated=%v duration_ms=%d call=%s",
		r.TimedOut, r.OOMKilled, r.StdoutBytes, r.StderrBytes, r.StdoutTruncated, r.DurationMs, took.Round(time.Millisecond))
	if r.ExitReason != "" {
		fmt.Fprintf(&b, " message=%q", r.ExitReason)
	}
	return b.String()
}

// lines returns the non-empty lines of s.
func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	return out
}

// probeReport checks the output of a probe script whose lines start with
// "ok NAME" when an attack failed as it should and "BREACH NAME" when it
// succeeded; every name in want must be reported ok.
func probeReport(t *testing.T, r *engine.Result, want ...string) {
	t.Helper()
	got := map[string]string{}
	for _, l := range lines(r.Stdout) {
		verdict, rest, _ := strings.Cut(l, " ")
		name, detail, _ := strings.Cut(rest, " ")
		name = strings.TrimSuffix(name, ":")
		switch verdict {
		case "ok":
			got[name] = detail
		case "BREACH":
			t.Errorf("BREACH %s: %s", name, detail)
			got[name] = "BREACH"
		case "info":
			t.Logf("  %-22s %s", name, detail)
		}
	}
	for _, name := range want {
		d, ok := got[name]
		switch {
		case !ok:
			t.Errorf("probe %s did not report; stdout %q stderr %q", name, r.Stdout, r.Stderr)
		case d != "BREACH":
			t.Logf("  %-22s blocked: %s", name, d)
		}
	}
}

// heapWatch samples the server's heap while a run is in flight.
type heapWatch struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapWatch {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w := &heapWatch{base: m.HeapInuse, stop: make(chan struct{}), done: make(chan struct{})}
	w.peak.Store(m.HeapInuse)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
			}
			var m runtime.MemStats
			runtime.ReadMemStats(&m)
			if m.HeapInuse > w.peak.Load() {
				w.peak.Store(m.HeapInuse)
			}
		}
	}()
	return w
}

// check stops sampling and fails the test if the heap grew by more than
// budget at any time.
func (w *heapWatch) check(t *testing.T, budget uint64) {
	t.Helper()
	close(w.stop)
	<-w.done
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	peak := max(w.peak.Load(), m.HeapInuse)
	t.Logf("server heap in use: %d MiB before, %d MiB at peak (budget +%d MiB)", w.base>>20, peak>>20, budget>>20)
	if peak > w.base+budget {
		t.Errorf("server heap grew from %d MiB to %d MiB, over the budget of +%d MiB", w.base>>20, peak>>20, budget>>20)
	}
}

// hostProcesses returns the host's processes whose command line contains
// marker. The tests run in the host's PID namespace (where the Docker
// daemon runs), so sandbox processes are visible here.
func hostProcesses(t *testing.T, marker string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatalf("reading /proc: %v", err)
	}
	var out []string
	for _, e := range entries {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		cmd, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !strings.Contains(string(cmd), marker) {
			continue
		}
		out = append(out, e.Name()+" "+strings.ReplaceAll(strings.TrimRight(string(cmd), "\x00"), "\x00", " "))
	}
	return out
}

// podman says the battery runs against Podman, whose reports differ from
// Docker's in a few places the tests name.
func podman(t *testing.T, h *harness) bool {
	t.Helper()
	e, err := h.b.Engine(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return e.Podman()
}

// containersCreated counts the create events of this process's sandboxes
// between since and until, as the engine records them.
func containersCreated(t *testing.T, b *docker.Backend, since, until time.Time) int {
	t.Helper()
	if e, err := b.Engine(context.Background()); err != nil {
		t.Fatal(err)
	} else if e.Podman() {
		return podmanContainersCreated(t, since, until)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	f := make(client.Filters).Add("type", "container").Add("event", "create").
		Add("label", docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()))
	ts := func(x time.Time) string { return fmt.Sprintf("%d.%09d", x.Unix(), x.Nanosecond()) }
	res := b.Client().Events(ctx, client.EventsListOptions{Since: ts(since), Until: ts(until), Filters: f})
	n := 0
	for {
		select {
		case _, ok := <-res.Messages:
			if ok {
				n++
			}
		case err := <-res.Err:
			if err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("reading Docker events: %v", err)
			}
			return n
		}
	}
}

// podmanContainersCreated is containersCreated on Podman 4.3, whose
// Docker-compatible event stream answers nothing for a time range: its own
// CLI reads the events (kept in a file: scripts/ensure-engines.sh), and the
// range's end is applied here, since its --until also answers nothing.
func podmanContainersCreated(t *testing.T, since, until time.Time) int {
	t.Helper()
	out, err := exec.Command("podman", "--events-backend=file", "events", "--stream=false",
		"--since", strconv.FormatInt(since.Unix(), 10), "--filter", "event=create",
		"--filter", "label="+docker.LabelOwnerPID+"="+strconv.Itoa(os.Getpid()),
		"--format", "{{.ID}} {{.Time.UnixNano}}").Output()
	if err != nil {
		t.Fatalf("reading Podman's events: %v", err)
	}
	n := 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		var id string
		var at int64
		if _, err := fmt.Sscanf(line, "%s %d", &id, &at); err == nil && at >= since.UnixNano() && at <= until.UnixNano() {
			n++
		}
	}
	return n
}

// freeBytes returns the free space of the file system holding path.
func freeBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		t.Fatalf("statfs %s: %v", path, err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// onLine calls fn once, the first time the stage's stdout contains marker.
func onLine(marker string, fn func()) func(c sandbox.Chunk) {
	var (
		mu   sync.Mutex
		seen strings.Builder
		once sync.Once
	)
	return func(c sandbox.Chunk) {
		mu.Lock()
		defer mu.Unlock()
		if seen.Len() < 1<<20 {
			seen.Write(c.Data)
		}
		if strings.Contains(seen.String(), marker) {
			once.Do(fn)
		}
	}
}

// fmtSscanf scans the first line of s that starts like format (up to its
// first verb).
func fmtSscanf(s, format string, args ...any) (int, error) {
	prefix := format
	if before, _, ok := strings.Cut(format, "%"); ok {
		prefix = before
	}
	for _, l := range lines(s) {
		if strings.HasPrefix(l, prefix) {
			return fmt.Sscanf(l, format, args...)
		}
	}
	return 0, fmt.Errorf("no line starting with %q", prefix)
}

// errNoHostView says that the sandbox's processes are not visible from the
// test process (the daemon runs in another PID namespace or a VM).
var errNoHostView = errors.New("the sandbox's processes are not visible from here")

// agentChannel opens, from the host, the channel the agent at pid sends its
// frames on, as a subverted agent could write anything there: its socket
// to the server (taken with pidfd_getfd), or its standard output when it
// serves on the attached streams.
func agentChannel(pid int) (*os.File, error) {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errNoHostView, err)
	}
	for _, e := range entries {
		link, err := os.Readlink(dir + "/" + e.Name())
		if err != nil || !strings.HasPrefix(link, "socket:") {
			continue
		}
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		pidfd, err := unix.PidfdOpen(pid, 0)
		if err != nil {
			return nil, fmt.Errorf("pidfd_open %d: %w", pid, err)
		}
		defer unix.Close(pidfd)
		dup, err := unix.PidfdGetfd(pidfd, fd, 0)
		if err != nil {
			return nil, fmt.Errorf("taking the agent's socket (fd %d) with pidfd_getfd: %w", fd, err)
		}
		return os.NewFile(uintptr(dup), link), nil
	}
	f, err := os.OpenFile(dir+"/1", os.O_WRONLY, 0)
	if err != nil {
		return nil, fmt.Errorf("opening the container's stdout from the host: %w", err)
	}
	return f, nil
}

// requireHostAccess skips a test that acts on a sandbox from the host (as
// a subverted agent, or a frozen one, would): it needs root on the Docker
// host, in the daemon's PID namespace. Under CI=true, where the tests run
// as root beside the daemon, it fails instead.
func requireHostAccess(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testutil.SkipUnlessCI(t, "needs root on the Docker host, to act on a sandbox's processes from outside")
	}
}

// skipIfNoHostView skips the test (or under CI=true fails it) when err
// says the sandbox's processes are not visible from here, and fails it on
// any other error.
func skipIfNoHostView(t *testing.T, err error) {
	t.Helper()
	switch {
	case err == nil:
	case errors.Is(err, errNoHostView):
		testutil.SkipUnlessCI(t, "%v", err)
	default:
		t.Fatal(err)
	}
}

// harnessEngine is the engine the hostile programs run on.
type harnessEngine struct{ *engine.Engine }

// Outputs is the store of the full outputs the engine's runs kept.
func (e harnessEngine) Outputs() *outputs.Store { return outputs.Runs(e.Config(), e.Store()) }
