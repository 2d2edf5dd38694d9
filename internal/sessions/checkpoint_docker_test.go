//go:build !fast

package sessions_test

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// checkpointManager is pauseManager on a backend that checkpoints: the
// crun backend (whatever MCR_TEST_BACKEND says) with the checkpoint tools
// (scripts/checkpoint-tools.sh), which CI installs, so there a missing
// tool fails the test.
func checkpointManager(t *testing.T, opts ...func(*config.Config)) (*sessions.Manager, string, *engine.Engine) {
	t.Helper()
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	for _, o := range opts {
		o(&cfg)
	}
	e, b := testbackend.CrunEngine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	// The manager's warnings say why a checkpoint or restore fell back.
	m := sessions.NewManager(e, sessions.WithLogger(slog.New(slog.NewTextHandler(testWriter{t}, nil))))
	t.Cleanup(func() {
		m.Shutdown()
		testutil.NoLeftovers(t, b.Client())
	})
	c, ok := e.Backend().(sandbox.Checkpointer)
	if !ok {
		t.Fatalf("the crun backend is not a Checkpointer")
	}
	if err := c.CheckpointSupport(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true: checkpoints must work here: %v", err)
		}
		t.Skipf("no checkpoints on this host: %v", err)
	}
	return m, cfg.DataDir, e
}

// testWriter writes to the test's log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

func TestAPausedSessionIsCheckpointedAndRestoredWithItsMemoryExactly(t *testing.T) {
	m, dir, _ := checkpointManager(t)
	ctx := context.Background()
	id := create(t, m, "python", 0)
	// A random number cannot be replayed: only a restore brings it back.
	r := run(t, m, id, "import random, subprocess\nx = [i for i in range(10**6)]\nsecret = random.random()\n"+
		"bg = subprocess.Popen(['sleep', '600'])\nf = open('open.txt', 'w')\nf.write('before ')\nsecret")
	secret := r.Value
	if err := m.WriteFiles(ctx, id, []engine.InputFile{{Path: "data/notes.txt", Content: "before the pause"}}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Pause(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p.Mode != sessions.ModeRestored || p.FilesKept != 2 {
		t.Fatalf("pause result %+v", p)
	}
	if m.SandboxOf(id) != "" {
		t.Errorf("a paused session still names a sandbox: %s", m.SandboxOf(id))
	}
	// The checkpoint is the sandbox's memory: the server's alone.
	checkpoint := filepath.Join(dir, "checkpoints", id)
	files := 0
	err = filepath.WalkDir(checkpoint, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		want := os.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		} else {
			files++
		}
		if fi.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", path, fi.Mode().Perm(), want)
		}
		return nil
	})
	if err != nil || files < 5 {
		t.Fatalf("the checkpoint under %s: %d files, %v", checkpoint, files, err)
	}
	r = run(t, m, id, "f.write('after')\nf.close()\nlen(x), secret, open('data/notes.txt').read(), open('open.txt').read(), bg.poll()")
	want := "(1000000, " + secret + ", 'before the pause', 'before after', None)"
	if r.Value != want || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored || r.Resumed.CellsReplayed != 0 {
		t.Fatalf("the call after the pause: value %q (want %q), resumed %+v, stderr %q", r.Value, want, r.Resumed, r.Stderr)
	}
	if _, err := os.Stat(checkpoint); !os.IsNotExist(err) {
		t.Errorf("the checkpoint outlives the restore: %v", err)
	}
	// A restored sandbox is paused and restored again like any other.
	if p, err := m.Pause(ctx, id); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("the second pause: %+v, %v", p, err)
	}
	if r := run(t, m, id, "x.append(1)\nlen(x), secret"); r.Value != "(1000001, "+secret+")" || r.Resumed == nil {
		t.Fatalf("the call after the second pause: %+v", r)
	}
	if _, err := m.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
}

// pidsProbe forks until refused, in a session cell that has imported
// subprocess; both %d are the pids limit. The sandbox's pids cgroup is
// where a sandbox sees it (its own cgroup mounted at the hierarchy's root,
// or its path under it), on cgroup v1 or v2.
const pidsProbe = `
import errno, os
def pids_dir():
    for line in open('/proc/self/cgroup'):
        _, controllers, path = line.rstrip('\n').split(':', 2)
        if 'pids' in controllers.split(','):
            dirs = ['/sys/fs/cgroup/pids' + path, '/sys/fs/cgroup/pids']
        elif controllers == '':
            dirs = ['/sys/fs/cgroup' + path, '/sys/fs/cgroup']
        else:
            continue
        for d in dirs:
            if os.path.exists(d + '/pids.events'):
                return d
def refusals():
    return int(open(pids_dir() + '/pids.events').read().split()[1])
before = refusals()
procs = []
try:
    for _ in range(1000):
        procs.append(subprocess.Popen(['sleep', '30']))
    r = 'no limit'
except OSError as e:
    r = errno.errorcode.get(e.errno, str(e))
for p in procs:
    p.kill()
r, 0 < len(procs) < %d, open(pids_dir() + '/pids.max').read().strip() == '%d', refusals() > before`

// The hostile checks of the containment battery, on a sandbox that a
// restore made: every control holds as it did before the checkpoint.
func TestARestoredSandboxKeepsEveryLimitAndHardeningControl(t *testing.T) {
	m, _, _ := checkpointManager(t)
	ctx := context.Background()
	id := create(t, m, "python", 0)
	run(t, m, id, "import os, socket, subprocess")
	if p, err := m.Pause(ctx, id); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("pause: %+v, %v", p, err)
	}
	checks := []struct{ name, code, want string }{
		{"the sandbox's user, not root", "os.getuid(), os.getgid()", "(10001, 10001)"},
		{"no capability at all", "[l.split()[1] for l in open('/proc/self/status') if l.startswith(('CapEff', 'CapPrm', 'CapBnd', 'CapAmb'))]",
			"['0000000000000000', '0000000000000000', '0000000000000000', '0000000000000000']"},
		{"no new privileges and a seccomp filter", "[l.split()[1] for l in open('/proc/self/status') if l.startswith(('NoNewPrivs', 'Seccomp:'))]", "['1', '2']"},
		{"a read-only root", "bool(os.statvfs('/').f_flag & os.ST_RDONLY), bool(os.statvfs('/workspace').f_flag & os.ST_RDONLY)", "(True, False)"},
		{"no new user namespace", "subprocess.run(['unshare', '-U', 'true'], capture_output=True).returncode != 0", "True"},
		{"no privileged operation: mount", "subprocess.run(['mount', '-t', 'tmpfs', 'x', '/tmp'], capture_output=True).returncode != 0", "True"},
		{"no network but loopback", "sorted(os.listdir('/sys/class/net'))", "['lo']"},
		{"no server file", "os.path.exists('/work') or os.path.exists('/var/lib/docker') or os.path.exists('/root/.ssh')", "False"},
		// The pids limit, and not another one (open files, memory, a
		// per-user count), ends the forks: fork fails with EAGAIN before
		// the limit's count, and the sandbox's pids cgroup, of that limit,
		// counts the refusal ("max" in pids.events).
		{"the pids limit", fmt.Sprintf(pidsProbe, config.Default().Limits.PidsLimit, config.Default().Limits.PidsLimit), "('EAGAIN', True, True, True)"},
	}
	if r := run(t, m, id, "1"); r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored {
		t.Fatalf("the first call after the pause: %+v", r.Resumed)
	}
	for _, c := range checks {
		r := run(t, m, id, c.code)
		if r.Value != c.want {
			t.Errorf("%s: %q gives %q (stderr %q), want %q", c.name, c.code, r.Value, r.Stderr, c.want)
		}
	}
	// The memory limit still ends a program that goes past it: the
	// kernel's OOM killer in the sandbox's cgroup, as the docs say, not an
	// allocation the interpreter refused (a limit of address space, say).
	r, err := m.Run(ctx, engine.Request{SessionID: id, Code: "b = bytearray(2 << 30)\nb[::4096] = b'x' * len(b[::4096])"}, engine.RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Status != engine.StatusOOM {
		t.Errorf("2 GiB in a restored sandbox: status %s, want %s: %+v", r.Status, engine.StatusOOM, r)
	}
}

// A checkpoint changed since the pause (a byte flipped in the memory it
// holds) or replaced by another session's is refused, and says so: the
// session's state is replayed from its cells and kept files instead.
func TestACorruptedOrForeignCheckpointIsRefusedAndTheSessionReplayed(t *testing.T) {
	m, dir, _ := checkpointManager(t)
	alice := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	bob := principal.WithContext(context.Background(), principal.Principal{Name: "bob"})
	checkpoint := func(id string) string { return filepath.Join(dir, "checkpoints", id) }
	paused := func(ctx context.Context, v string) string {
		t.Helper()
		info, err := m.Create(ctx, "python", 0, sessions.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: "v = '" + v + "'"}, engine.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if p, err := m.Pause(ctx, info.SessionID); err != nil || p.Mode != sessions.ModeRestored {
			t.Fatalf("pause: %+v, %v", p, err)
		}
		return info.SessionID
	}
	cases := []struct {
		name   string
		change func(t *testing.T, id string)
	}{
		{"with a byte of its memory flipped", func(t *testing.T, id string) {
			pages, err := filepath.Glob(filepath.Join(checkpoint(id), "images", "pages-*.img"))
			if err != nil || len(pages) == 0 {
				t.Fatalf("no memory pages in the checkpoint: %v", err)
			}
			data, err := os.ReadFile(pages[0])
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/2] ^= 0x20
			if err := os.WriteFile(pages[0], data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by another principal's", func(t *testing.T, id string) {
			other := paused(bob, "bob")
			if err := os.RemoveAll(checkpoint(id)); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(checkpoint(other), checkpoint(id)); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := paused(alice, "alice")
			c.change(t, id)
			r, err := m.Run(alice, engine.Request{SessionID: id, Code: "v"}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Value != "'alice'" || r.Resumed == nil || r.Resumed.Mode != sessions.ModeReplayed ||
				!strings.Contains(r.Resumed.CheckpointRefused, "refused") || !strings.Contains(r.Resumed.CheckpointRefused, "changed since the pause") {
				t.Fatalf("resuming from a checkpoint %s: value %s, resumed %+v", c.name, r.Value, r.Resumed)
			}
			if _, err := os.Stat(checkpoint(id)); !os.IsNotExist(err) {
				t.Errorf("the refused checkpoint stays: %v", err)
			}
		})
	}
}

// The checkpoint and the record that names it outlive the server: the next
// one restores the session exactly, and a closed session's checkpoint goes
// with it.
func TestACheckpointedSessionIsRestoredByTheNextServerAndRemovedWithIt(t *testing.T) {
	first, dir, e := checkpointManager(t)
	ctx := context.Background()
	id := create(t, first, "python", 0)
	secret := run(t, first, id, "import random\nsecret = random.random()\nsecret").Value
	if p, err := first.Pause(ctx, id); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("pause: %+v, %v", p, err)
	}
	// The first server stops without closing its session (a crash); the
	// next one starts on the same store and data directory.
	next := sessions.NewManager(e)
	t.Cleanup(next.Shutdown)
	if err := next.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	r := run(t, next, id, "secret")
	if r.Value != secret || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored {
		t.Fatalf("the session after the restart: value %s (want %s), resumed %+v", r.Value, secret, r.Resumed)
	}
	if p, err := next.Pause(ctx, id); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("the pause after the restart: %+v, %v", p, err)
	}
	if _, err := next.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints", id)); !os.IsNotExist(err) {
		t.Errorf("a closed session's checkpoint stays: %v", err)
	}
	// A checkpoint whose session the store no longer has (it ended while
	// no server ran) goes at the next server's start.
	stray := filepath.Join(dir, "checkpoints", "sess-0123456789abcdef")
	if err := os.MkdirAll(filepath.Join(stray, "images"), 0o700); err != nil {
		t.Fatal(err)
	}
	third := sessions.NewManager(e)
	t.Cleanup(third.Shutdown)
	if err := third.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stray); !os.IsNotExist(err) {
		t.Errorf("a checkpoint of no session stays: %v", err)
	}
}

// A sandbox that a fork made in place shares is not checkpointed while the
// fork lives (the pause gives up the original's part alone and replays);
// once the fork is closed, the original has it alone again, and its pause
// checkpoints it.
func TestASandboxSharedWithAForkIsCheckpointedOnceTheForkIsClosed(t *testing.T) {
	m, _, _ := checkpointManager(t)
	ctx := context.Background()
	id := create(t, m, "python", 0)
	run(t, m, id, "x = 41")
	f, err := m.Fork(ctx, id)
	if err != nil || f.Mode != sessions.ModeForked {
		t.Fatalf("fork: %+v, %v", f, err)
	}
	if _, err := m.Close(ctx, f.Session.SessionID); err != nil {
		t.Fatal(err)
	}
	if p, err := m.Pause(ctx, id); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("the pause after the fork closed: %+v, %v", p, err)
	}
	if r := run(t, m, id, "x + 1"); r.Value != "42" || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored {
		t.Fatalf("the call after the pause: %+v", r)
	}
}

// The reaper's pause after sessions.idle_pause_seconds checkpoints too: the
// idle session keeps no process, and its next call restores it.
func TestAnIdleSessionIsCheckpointedAutomatically(t *testing.T) {
	m, _, _ := checkpointManager(t, func(c *config.Config) { c.Sessions.IdlePauseSeconds = 1 })
	id := create(t, m, "python", 0)
	secret := run(t, m, id, "import random\nsecret = random.random()\nsecret").Value
	testutil.Eventually(t, 30e9, func() bool { l := m.List(context.Background()); return len(l) == 1 && l[0].Paused }, "the idle session paused")
	if sb := m.SandboxOf(id); sb != "" {
		t.Errorf("the paused session still names a sandbox: %s", sb)
	}
	if r := run(t, m, id, "secret"); r.Value != secret || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored {
		t.Errorf("after the automatic pause: value %s (want %s), resumed %+v", r.Value, secret, r.Resumed)
	}
}
