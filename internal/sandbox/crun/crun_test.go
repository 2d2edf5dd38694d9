//go:build linux && !fast

package crun_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/crun"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// newBackend returns a crun backend on the local Docker daemon's images,
// in a state directory of the test's own; without crun, root or Docker it
// skips, or under CI=true fails.
func newBackend(t *testing.T) (*crun.Backend, string) {
	t.Helper()
	return newBackendWith(t, "")
}

// newBackendWith is newBackend, with gVisor's runsc when runsc is not "":
// then gVisor must work too, and Close must leave nothing mounted under
// the state directory (runsc binds a network namespace in its root).
func newBackendWith(t *testing.T, runsc string) (*crun.Backend, string) {
	t.Helper()
	cli := testutil.RequireDocker(t)
	state := testutil.CrunStateDir(t)
	b, err := crun.New(cli, crun.Options{AgentPath: testutil.AgentBinary(t), StateDir: state, Runsc: runsc})
	if err == nil {
		err = b.Check(context.Background())
	}
	if err == nil && runsc != "" {
		err = b.IsolationSupport(sandbox.IsolationGVisor)
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("the crun backend (runsc %q) is required under CI=true: %v", runsc, err)
		}
		t.Skipf("crun backend (runsc %q) unavailable: %v", runsc, err)
	}
	t.Cleanup(func() {
		_ = b.Close()
		if mounts, err := os.ReadFile("/proc/self/mountinfo"); runsc != "" && err == nil && strings.Contains(string(mounts), " "+state+"/") {
			t.Errorf("mounts under the backend's state directory %s remain after Close", state)
		}
		_ = os.RemoveAll(state)
	})
	return b, state
}

func newEngine(t *testing.T, b sandbox.Backend, cfg *config.Config) *engine.Engine {
	t.Helper()
	c := config.Default()
	if cfg != nil {
		c = *cfg
	}
	reg := languages.Builtin()
	e := engine.New(c, reg, b, nil)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		_ = e.Close(ctx)
	})
	return e
}

// leftovers lists the containers crun still holds in state, and the
// bundles left there.
// A listing can fail while crun removes a container (its state goes as it
// is read): that counts as something left, and the caller asks again.
func leftovers(t *testing.T, b *crun.Backend, state string) []string {
	t.Helper()
	out, err := exec.Command(b.Binary(), "--root", filepath.Join(state, "crun"), "list", "--quiet").CombinedOutput()
	if err != nil {
		return []string{fmt.Sprintf("(crun list: %v: %s)", err, out)}
	}
	left := strings.Fields(string(out))
	entries, _ := os.ReadDir(filepath.Join(state, "bundles"))
	for _, e := range entries {
		left = append(left, "bundle "+e.Name())
	}
	return left
}

func requireNoLeftovers(t *testing.T, b *crun.Backend, state string) {
	t.Helper()
	var left []string
	if !testutil.WaitFor(30*time.Second, func() bool {
		left = leftovers(t, b, state)
		return len(left) == 0
	}) {
		t.Errorf("left behind after the runs: %v", left)
	}
}

// hardeningProbe prints what a sandbox's program can see of its
// confinement, one fact a line, in terms that hold on every backend.
const hardeningProbe = `
echo "user $(id -u):$(id -g) groups $(id -G)"
grep -E '^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp):' /proc/self/status | tr -s '\t ' ' '
echo "interfaces: $(ls /sys/class/net | tr '\n' ' ')"
echo "ulimits: nofile $(ulimit -n) fsize $(ulimit -f) core $(ulimit -c)"
for d in / /usr /etc /opt/mcp-code-runner /tmp /workspace /dev/shm /proc/sys /sys /sys/fs/cgroup; do
  if touch "$d/.probe" 2>/dev/null; then rm -f "$d/.probe"; echo "$d writable"; else echo "$d read-only"; fi
done
echo "/etc/hosts writable: $(test -w /etc/hosts && echo yes || echo no)"
echo "sizes: tmp $(df -k --output=size /tmp | tail -1 | tr -d ' ') workspace $(df -k --output=size /workspace | tail -1 | tr -d ' ') shm $(df -k --output=size /dev/shm | tail -1 | tr -d ' ')"
echo "inodes: tmp $(df --output=itotal /tmp | tail -1 | tr -d ' ') workspace $(df --output=itotal /workspace | tail -1 | tr -d ' ')"
printf '#!/bin/sh\necho ran\n' > /workspace/x.sh; chmod +x /workspace/x.sh; echo "exec in workspace: $(/workspace/x.sh 2>&1)"
cp /workspace/x.sh /dev/shm/x.sh; echo "exec in /dev/shm: $(/dev/shm/x.sh >/dev/null 2>&1 && echo ran || echo refused)"
echo "memory limit: $(cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max)"
echo "pids limit: $(cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max)"
echo "cpu quota: $(cat /sys/fs/cgroup/cpu/cpu.cfs_quota_us 2>/dev/null || cut -d' ' -f1 /sys/fs/cgroup/cpu.max)"
echo "kcore bytes: $(wc -c < /proc/kcore 2>/dev/null || echo unreadable)"
echo "unshare: $(unshare -U true 2>/dev/null && echo allowed || echo refused)"
echo "mount: $(mount -t tmpfs none /tmp 2>/dev/null && echo allowed || echo refused)"
echo "/etc/hosts names only loopback: $(grep -v '^#' /etc/hosts | awk 'NF && $1 != "127.0.0.1" && $1 != "::1"' | wc -l | sed 's/^0$/yes/')"
echo "hostname length: $(hostname | wc -c), /etc/hostname the same: $(test "$(cat /etc/hostname)" = "$(hostname)" && echo yes || echo no)"
echo "pid 1: $(tr '\0' ' ' < /proc/1/cmdline)"
echo "devices: $(ls /dev | sort | tr '\n' ' ')"
echo "env: $(env | cut -d= -f1 | grep -v '^_$' | sort | tr '\n' ' ')"
`

// TestACrunSandboxIsConfinedAsADockerSandboxIs runs the same probe in a
// sandbox of each backend and asks for the same answers: the user, the
// capabilities, seccomp, no-new-privileges, the network, the limits, what
// is writable and executable, the masked kernel files.
func TestACrunSandboxIsConfinedAsADockerSandboxIs(t *testing.T) {
	b, state := newBackend(t)
	db := testutil.Backend(t)
	testutil.RequireImage(t, db, languages.Builtin(), "bash")
	ctx := context.Background()
	probe := func(on sandbox.Backend) []string {
		r, err := newEngine(t, on, nil).Run(ctx, engine.Request{Language: "bash", Code: hardeningProbe}, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != engine.StatusOK {
			t.Fatalf("probe on %T: %s: %s %s", on, r.Status, r.Stdout, r.Stderr)
		}
		return strings.Split(strings.TrimSpace(r.Stdout), "\n")
	}
	want := probe(db)
	// The first crun sandbox compiles its seccomp filter; the second
	// loads the compiled one. Both must confine alike.
	for _, which := range []string{"first", "second"} {
		got := probe(b)
		if len(want) != len(got) {
			t.Fatalf("the probe printed %d lines on docker, %d on crun (%s sandbox):\ndocker:\n%s\ncrun:\n%s", len(want), len(got), which, strings.Join(want, "\n"), strings.Join(got, "\n"))
		}
		for i := range want {
			if want[i] != got[i] {
				t.Errorf("%s crun sandbox:\ndocker: %s\ncrun:   %s", which, want[i], got[i])
			}
		}
	}
	t.Logf("the same on both:\n%s", strings.Join(want, "\n"))
	requireNoLeftovers(t, b, state)
}

// TestCrunServesColdRunsWarmPoolsAndSessions runs hello worlds on the cold
// path, from warm pools (whose interpreters start before the job) and in
// a session that keeps its state between calls.
func TestCrunServesColdRunsWarmPoolsAndSessions(t *testing.T) {
	b, state := newBackend(t)
	reg := languages.Builtin()
	for _, lang := range []string{"bash", "python", "javascript"} {
		testutil.RequireImage(t, testutil.Backend(t), reg, lang)
	}
	cfg := config.Default()
	cfg.Pool.Size, cfg.Pool.Sizes = 0, []string{"python=1", "javascript=1"}
	e := newEngine(t, b, &cfg)
	e.StartPool()
	ctx := context.Background()
	tests := []struct {
		name, lang, code, want string
	}{
		{"cold bash", "bash", "echo hello from $0", "hello from"},
		{"warm python", "python", "import sys; print('hello', sys.argv[0])", "hello"},
		{"warm python again", "python", "print(6*7)", "42"},
		{"warm javascript", "javascript", "console.log('hello', typeof require)", "hello function"},
		{"warm javascript again", "javascript", "console.log(6*7)", "42"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.Run(ctx, engine.Request{Language: tt.lang, Code: tt.code}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != engine.StatusOK || !strings.Contains(r.Stdout, tt.want) {
				t.Errorf("status %s, stdout %q, stderr %q; want %q", r.Status, r.Stdout, r.Stderr, tt.want)
			}
		})
	}
	m := sessions.NewManager(e)
	s, err := m.Create(ctx, "python", 0, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i, step := range []struct{ code, want string }{{"x = 41", ""}, {"x + 1", "42"}} {
		r, err := m.Run(ctx, engine.Request{SessionID: s.SessionID, Code: step.code}, engine.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.Status != engine.StatusOK || r.Value != step.want {
			t.Errorf("session step %d: status %s, value %q, stderr %q; want %q", i, r.Status, r.Value, r.Stderr, step.want)
		}
	}
	m.Shutdown()
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := e.Close(cctx); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, b, state)
}

// TestCrunEnforcesTheLimits runs what each limit is for: a memory bomb is
// OOM-killed, a fork bomb stops at the pids limit, a run past its time is
// killed with its output kept, a disk flood gets ENOSPC; and nothing stays.
func TestCrunEnforcesTheLimits(t *testing.T) {
	b, state := newBackend(t)
	testutil.RequireImage(t, testutil.Backend(t), languages.Builtin(), "python")
	e := newEngine(t, b, nil)
	ctx := context.Background()
	tests := []struct {
		name  string
		req   engine.Request
		check func(r *engine.Result) string
	}{
		{"a memory bomb is OOM-killed", engine.Request{Language: "python", Code: "x = []\nwhile True: x.append(bytearray(16 << 20))"},
			func(r *engine.Result) string {
				if !r.Stage.OOMKilled {
					return "not reported as OOM-killed"
				}
				return ""
			}},
		{"a fork bomb stops at the pids limit", engine.Request{Language: "python", TimeoutSeconds: 30,
			Code: "import os, time\nn = 0\ntry:\n    while n < 5000:\n        if os.fork() == 0:\n            time.sleep(60)\n            os._exit(0)\n        n += 1\nexcept OSError as e:\n    print('stopped at', n, e.strerror)"},
			func(r *engine.Result) string {
				var n int
				if _, err := fmt.Sscanf(r.Stdout, "stopped at %d", &n); err != nil || n >= 5000 || !strings.Contains(r.Stdout, "Resource temporarily unavailable") {
					return fmt.Sprintf("not bounded: %q", r.Stdout)
				}
				return ""
			}},
		{"a run past its time is killed, its output kept", engine.Request{Language: "bash", TimeoutSeconds: 2, Code: "echo before; sleep 60; echo after"},
			func(r *engine.Result) string {
				if !r.Stage.TimedOut || !strings.Contains(r.Stdout, "before") || strings.Contains(r.Stdout, "after") {
					return fmt.Sprintf("timed out %v, stdout %q", r.Stage.TimedOut, r.Stdout)
				}
				return ""
			}},
		{"a disk flood gets ENOSPC (files under the size limit, past the workspace's)", engine.Request{Language: "bash", Code: "for i in $(seq 20); do dd if=/dev/zero of=/workspace/f$i bs=1M count=16; done 2>&1 | grep -o 'No space left on device' | head -1"},
			func(r *engine.Result) string {
				if !strings.Contains(r.Stdout, "No space left") {
					return fmt.Sprintf("not bounded: %q", r.Stdout)
				}
				return ""
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := e.Run(ctx, tt.req, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if msg := tt.check(r); msg != "" {
				t.Errorf("%s (status %s, stderr %q)", msg, r.Status, r.Stderr)
			}
		})
	}
	requireNoLeftovers(t, b, state)
}

// TestCrunRefusesWhatItCannotDo gives a clear error, and leaves nothing,
// for a missing image.
func TestCrunRefusesWhatItCannotDo(t *testing.T) {
	b, state := newBackend(t)
	ctx := context.Background()
	tmpl := sandbox.Template{Image: "mcp-code-runner/no-such-image:0", MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 64, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1}}
	if _, err := b.Create(ctx, tmpl); !errors.Is(err, sandbox.ErrImageMissing) {
		t.Errorf("a missing image: %v, want ErrImageMissing", err)
	}
	if err := b.CheckImage(ctx, tmpl.Image); !errors.Is(err, sandbox.ErrImageMissing) {
		t.Errorf("CheckImage of a missing image: %v, want ErrImageMissing", err)
	}
	requireNoLeftovers(t, b, state)
}

// greetingEgress answers every connection to its socket with a greeting:
// a sandbox's program that reads it reached its own egress proxy.
type greetingEgress struct{}

func (greetingEgress) Serve(ln net.Listener) error {
	for {
		c, err := ln.Accept()
		if err != nil {
			return err
		}
		_, _ = c.Write([]byte("proxy here\n"))
		_ = c.Close()
	}
}

// A sandbox with network access keeps loopback alone; its one way out is
// its agent's relay on wire.EgressListen to the socket of its own proxy,
// which goes with the sandbox.
func TestACrunSandboxWithNetworkAccessReachesOnlyItsOwnProxy(t *testing.T) {
	b, state := newBackend(t)
	ctx := context.Background()
	tmpl := sandbox.Template{Image: languages.Builtin().ImageOf(mustLookup(t, "bash")).Tag, MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 64, CPUs: 1, PidsLimit: 64, WorkspaceMB: 1, TmpMB: 1, NoFile: 64, FileSizeMB: 1},
		Egress:    greetingEgress{}}
	sb, err := b.Create(ctx, tmpl)
	if err != nil {
		t.Fatal(err)
	}
	script := "exec 3<>/dev/tcp/" + strings.Replace(wire.EgressListen, ":", "/", 1) + " && head -1 <&3\n" +
		"echo \"interfaces: $(ls /sys/class/net | tr '\\n' ' ')\"\n"
	res, err := sb.Exec(ctx, sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 4096,
		Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 60_000}}}}, nil)
	sb.Close()
	if err != nil || len(res.Stages) != 1 {
		t.Fatalf("want one stage, got %+v, %v", res, err)
	}
	if got, want := string(res.Stages[0].Stdout), "proxy here\ninterfaces: lo \n"; got != want {
		t.Errorf("the sandbox printed %q (stderr %q), want %q", got, res.Stages[0].Stderr, want)
	}
	requireNoLeftovers(t, b, state)
}

func mustLookup(t *testing.T, name string) languages.Language {
	t.Helper()
	l, ok := languages.Builtin().Lookup(name)
	if !ok {
		t.Fatalf("no language %s", name)
	}
	return l
}

// A crun sandbox's memory use is read from its host cgroup, for the
// operator console: a session whose program holds 110 MiB shows a use
// above 100 MiB.
func TestACrunSandboxsMemoryUseIsReadFromItsHostCgroup(t *testing.T) {
	b, state := newBackend(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sb, err := b.Create(ctx, sandbox.Template{Image: languages.Builtin().ImageOf(mustLookup(t, "bash")).Tag, MaxLife: time.Minute,
		Resources: sandbox.Resources{MemoryMB: 512, CPUs: 1, PidsLimit: 64, WorkspaceMB: 4, TmpMB: 4, NoFile: 64, FileSizeMB: 1}})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	if _, ok := sandbox.MemoryUsage(sb); !ok {
		t.Fatal("a crun sandbox's memory use cannot be read")
	}
	// The program holds 110 MiB in a variable, says so, and waits to be
	// cancelled.
	script := `x=$(head -c 115343360 /dev/zero | tr '\0' a); echo allocated ${#x}; sleep 60`
	job := sandbox.Job{Deadline: time.Minute, Request: wire.Request{Workdir: wire.WorkspacePath, OutputLimit: 1 << 16, Session: true,
		Files:  []wire.File{{Path: "main.sh", Data: []byte(script)}},
		Stages: []wire.Stage{{Name: "run", Argv: []string{"bash", "main.sh"}, TimeoutMs: 60_000}}}}
	allocated := make(chan struct{})
	var once sync.Once
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = sb.Call(ctx, job, func(c sandbox.Chunk) {
			if strings.Contains(string(c.Data), "allocated") {
				once.Do(func() { close(allocated) })
			}
		})
	}()
	select {
	case <-allocated:
	case <-done:
		t.Fatal("the program ended before it held its memory")
	}
	used, ok := sandbox.MemoryUsage(sb)
	if !ok || used < 100<<20 {
		t.Errorf("the sandbox's memory use reads %d MiB (ok %v), want more than 100 MiB: its program holds 110 MiB", used>>20, ok)
	}
	cancel()
	<-done
	sb.Close()
	requireNoLeftovers(t, b, state)
}

// The operator's listings carry a live session's and a running execution's
// memory use, read from their crun sandboxes' host cgroups: each holds
// 110 MiB and lists more than 100 MiB.
func TestAnOperatorsListingsCarryTheMemoryCrunSandboxesUse(t *testing.T) {
	b, state := newBackend(t)
	reg := languages.Builtin()
	for _, lang := range []string{"bash", "python"} {
		testutil.RequireImage(t, testutil.Backend(t), reg, lang)
	}
	cfg := config.Default()
	cfg.Pool.Size, cfg.Limits.MemoryMB = 0, 512
	e := newEngine(t, b, &cfg)
	ctx := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	operator := principal.WithContext(context.Background(), principal.Principal{Name: "ops", Operator: true})
	sess := sessions.NewManager(e)
	closeSessions := sync.OnceFunc(sess.Shutdown)
	defer closeSessions()
	s, err := sess.Create(ctx, "python", 0, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := sess.Run(ctx, engine.Request{SessionID: s.SessionID, Code: `x = b"a" * (110 << 20)`}, engine.RunOptions{}); err != nil || r.Status != engine.StatusOK {
		t.Fatalf("the session's cell: %+v, %v", r, err)
	}
	sessionsMemory := map[string]uint64{}
	for _, info := range sess.List(operator) {
		sessionsMemory[info.SessionID] = info.MemoryBytes
	}
	requireHeld(t, "session", s.SessionID, sessionsMemory)

	execs := executions.NewManager(e)
	closeExecutions := sync.OnceFunc(func() { execs.Shutdown(context.Background()) })
	defer closeExecutions()
	x, err := execs.Start(ctx, engine.Request{Language: "bash", Code: `x=$(head -c 115343360 /dev/zero | tr '\0' a); echo allocated ${#x}; sleep 60`})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _, _ = execs.Cancel(ctx, x.ExecutionID) }()
	// The program says when it holds its memory; its output is polled
	// until then.
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		g, err := execs.Get(ctx, x.ExecutionID, 0, 0, 0)
		if err != nil || g.Status != executions.StatusRunning {
			t.Fatalf("the execution ended (%s, %v) before it held its memory: %q %q", g.Status, err, g.Stdout, g.Stderr)
		}
		if strings.Contains(g.Stdout, "allocated") {
			break
		}
		<-tick.C
	}
	executionsMemory := map[string]uint64{}
	for _, l := range execs.List(operator) {
		executionsMemory[l.ExecutionID] = l.MemoryBytes
	}
	requireHeld(t, "execution", x.ExecutionID, executionsMemory)
	if _, err := execs.Cancel(ctx, x.ExecutionID); err != nil {
		t.Fatal(err)
	}
	closeExecutions()
	closeSessions()
	cctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.Close(cctx); err != nil {
		t.Fatal(err)
	}
	requireNoLeftovers(t, b, state)
}

// requireHeld checks that the operator's listing, the memory each id's
// sandbox uses, has id's above 100 MiB (its program holds 110).
func requireHeld(t *testing.T, what, id string, listing map[string]uint64) {
	t.Helper()
	used, ok := listing[id]
	switch {
	case !ok:
		t.Errorf("the operator's listing misses %s %s", what, id)
	case used < 100<<20:
		t.Errorf("the %s holding 110 MiB lists %d MiB", what, used>>20)
	}
}
