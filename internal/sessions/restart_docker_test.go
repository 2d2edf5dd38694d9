//go:build !fast

package sessions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestASessionWhoseSandboxDidNotSurviveTheRestartIsReplayed: the server
// stops without closing its session (a crash), and its sandbox is gone
// before the next server starts on the same store. The next server keeps
// the session: its next call rebuilds it in a new sandbox by replaying its
// cells, so the variable and the file a cell wrote are back, and the
// result says so (resumed, cause restart).
func TestASessionWhoseSandboxDidNotSurviveTheRestartIsReplayed(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	e, b := testutil.Engine(t, &cfg)
	testutil.RequireImage(t, b, languages.Builtin(), "python")
	ctx := context.Background()
	first := sessions.NewManager(e)
	id := create(t, first, "python", 0)
	run(t, first, id, "x = 41\nopen('kept.txt', 'w').write('kept')")
	// The cell reaches the session's record in the background.
	if !testutil.WaitFor(10*time.Second, func() bool {
		v, err := e.Store().Get(ctx, "sessions/"+id)
		return err == nil && strings.Contains(string(v), "kept.txt")
	}) {
		t.Fatal("the cell never reached the session's record")
	}
	gone := first.SandboxOf(id)
	if _, err := b.Client().ContainerRemove(ctx, gone, client.ContainerRemoveOptions{Force: true}); err != nil {
		t.Fatal(err)
	}

	next := sessions.NewManager(e)
	t.Cleanup(func() {
		next.Shutdown()
		testutil.NoLeftovers(t, b.Client())
	})
	if err := next.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	res := run(t, next, id, "print(x + 1, open('kept.txt').read())")
	if strings.TrimSpace(res.Stdout) != "42 kept" {
		t.Errorf("the session after its sandbox was lost: %+v", res)
	}
	if r := res.Resumed; r == nil || r.Mode != sessions.ModeReplayed || r.Cause != engine.ResumedRestart || r.CellsReplayed != 1 || r.Lost == "" {
		t.Errorf("the first call after the restart should say the session was replayed: %+v", r)
	}
	if again := run(t, next, id, "print(x)"); again.Resumed != nil || strings.TrimSpace(again.Stdout) != "41" {
		t.Errorf("the second call: %+v", again)
	}
	if sb := next.SandboxOf(id); sb == "" || sb == gone {
		t.Errorf("the session's sandbox after the replay: %q (the lost one was %q)", sb, gone)
	}
}
