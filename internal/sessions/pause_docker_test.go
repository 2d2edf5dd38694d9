//go:build !fast

package sessions_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// pauseManager is a manager whose data directory (where paused sessions'
// files are kept) is the test's own, and whose pauses replay: the mode of
// every host; checkpoint_docker_test.go tests the checkpoints of the hosts
// that can.
func pauseManager(t *testing.T, cfg config.Config) (*sessions.Manager, string, func()) {
	t.Helper()
	cfg.DataDir = t.TempDir()
	cfg.Sessions.CheckpointTools = "off"
	e, b := testbackend.Engine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	m := sessions.NewManager(e)
	t.Cleanup(func() {
		m.Shutdown()
		testutil.NoLeftovers(t, b.Client())
	})
	return m, cfg.DataDir, func() { t.Helper(); testutil.NoLeftovers(t, b.Client()) }
}

func TestPausedSessionHasNoSandboxAndResumesWithItsState(t *testing.T) {
	m, dir, noSandbox := pauseManager(t, config.Default())
	ctx := context.Background()
	id := create(t, m, "python", 0)
	run(t, m, id, "x = [i for i in range(10**6)]")
	if err := m.WriteFiles(ctx, id, []engine.InputFile{{Path: "data/notes.txt", Content: "before the pause"}}); err != nil {
		t.Fatal(err)
	}
	p, err := m.Pause(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if p.FilesKept != 1 || p.CellsToRun != 1 || p.Mode != sessions.ModeReplayed {
		t.Errorf("pause result %+v", p)
	}
	noSandbox()
	if m.SandboxOf(id) != "" {
		t.Errorf("a paused session still names a sandbox: %s", m.SandboxOf(id))
	}
	archive := filepath.Join(dir, "paused-sessions", id+".tar")
	if fi, err := os.Stat(archive); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("the kept files: %v, %v", fi, err)
	}
	if l := m.List(ctx); len(l) != 1 || !l[0].Paused {
		t.Errorf("list after the pause: %+v", l)
	}
	r := run(t, m, id, "len(x), open('data/notes.txt').read()")
	if r.Value != "(1000000, 'before the pause')" || r.Resumed == nil || r.Resumed.Mode != sessions.ModeReplayed || r.Resumed.CellsReplayed != 1 {
		t.Fatalf("the call after the pause: value %q, resumed %+v", r.Value, r.Resumed)
	}
	if r := run(t, m, id, "len(x)"); r.Resumed != nil || r.Value != "1000000" {
		t.Errorf("the second call after the pause: %+v", r)
	}
	if _, err := os.Stat(archive); !os.IsNotExist(err) {
		t.Errorf("the kept files outlive the resume: %v", err)
	}
}

func TestAPausedArchiveThatIsCorruptedOrForeignIsRefused(t *testing.T) {
	m, dir, _ := pauseManager(t, config.Default())
	alice := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	bob := principal.WithContext(context.Background(), principal.Principal{Name: "bob"})
	path := func(id string) string { return filepath.Join(dir, "paused-sessions", id+".tar") }
	paused := func(ctx context.Context, v string) string {
		t.Helper()
		info, err := m.Create(ctx, "python", 0, sessions.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: "v = '" + v + "'"}, engine.RunOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := m.Pause(ctx, info.SessionID); err != nil {
			t.Fatal(err)
		}
		return info.SessionID
	}
	cases := []struct {
		name   string
		change func(t *testing.T, id string)
	}{
		{"with a byte flipped", func(t *testing.T, id string) {
			data, err := os.ReadFile(path(id))
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)/3] ^= 0x20
			if err := os.WriteFile(path(id), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by another principal's", func(t *testing.T, id string) {
			data, err := os.ReadFile(path(paused(bob, "bob")))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path(id), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced by what is not an archive", func(t *testing.T, id string) {
			if err := os.WriteFile(path(id), []byte("not an archive"), 0o600); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := paused(alice, "alice")
			c.change(t, id)
			_, err := m.Run(alice, engine.Request{SessionID: id, Code: "v"}, engine.RunOptions{})
			if err == nil || !strings.Contains(err.Error(), "cannot be resumed") || !strings.Contains(err.Error(), "corrupted or not its own") {
				t.Fatalf("resuming from an archive %s: %v", c.name, err)
			}
			if _, err := os.Stat(path(id)); !os.IsNotExist(err) {
				t.Errorf("the refused archive stays: %v", err)
			}
			if l := m.List(alice); slices.ContainsFunc(l, func(i sessions.Info) bool { return i.SessionID == id }) {
				t.Errorf("the session whose archive was refused is still listed: %+v", l)
			}
		})
	}
}

// TestAPausedSessionsArchiveGoesWithIt: however a paused session ends, its
// kept files are removed with it.
func TestAPausedSessionsArchiveGoesWithIt(t *testing.T) {
	m, dir, _ := pauseManager(t, config.Default())
	ctx := context.Background()
	cases := []struct {
		name string
		idle int
		end  func(t *testing.T, id string)
	}{
		{"closed", 0, func(t *testing.T, id string) {
			if _, err := m.Close(ctx, id); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired after its idle timeout", 1, func(t *testing.T, _ string) {
			testutil.Eventually(t, 30*time.Second, func() bool { return len(m.List(ctx)) == 0 }, "the paused session expired")
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			id := create(t, m, "python", c.idle)
			if err := m.WriteFiles(ctx, id, []engine.InputFile{{Path: "notes.txt", Content: "kept"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := m.Pause(ctx, id); err != nil {
				t.Fatal(err)
			}
			archive := filepath.Join(dir, "paused-sessions", id+".tar")
			if _, err := os.Stat(archive); err != nil {
				t.Fatalf("the paused session's kept files: %v", err)
			}
			c.end(t, id)
			testutil.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(archive); return os.IsNotExist(err) }, "the ended session's archive removed")
		})
	}
}

func TestIdleSessionsArePausedAutomatically(t *testing.T) {
	cfg := config.Default()
	cfg.Sessions.IdlePauseSeconds = 1
	m, _, noSandbox := pauseManager(t, cfg)
	id := create(t, m, "python", 0)
	run(t, m, id, "y = 41")
	testutil.Eventually(t, 30e9, func() bool { l := m.List(context.Background()); return len(l) == 1 && l[0].Paused }, "the idle session paused")
	noSandbox()
	if r := run(t, m, id, "y + 1"); r.Value != "42" || r.Resumed == nil {
		t.Errorf("after the automatic pause: %+v", r)
	}
}

func TestSpareSandboxesServeSessionsOnDockerAndLeaveNothingBehind(t *testing.T) {
	cfg := config.Default()
	cfg.Sessions.Spares = []string{"python=1"}
	m, _, _ := pauseManager(t, cfg)
	testSpares(t, m)
}

func TestAPythonSessionForksInItsSandboxOnDockerAndLeavesNothingBehind(t *testing.T) {
	m, _, _ := pauseManager(t, config.Default())
	testForkInPlace(t, m)
}
