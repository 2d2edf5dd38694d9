package sessions_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func TestSpareSandboxesServeCreateResumeAndForkWithTheInterpreterStartedAhead(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	cfg.Sessions.Spares = []string{"python=1"}
	testSpares(t, fakeManager(t, &cfg))
}

// testSpares checks sessions.spares on a manager configured with
// python=1. A session that took a spare answers its first call in an
// interpreter started ahead (interpreter_restarted is false); one that
// started its own sandbox starts it in that call.
func testSpares(t *testing.T, m *sessions.Manager) {
	t.Helper()
	ctx := context.Background()
	spareReady := func() {
		testutil.Eventually(t, 3*time.Minute, func() bool { return m.SparesReady("python") == 1 }, "a spare python sandbox")
	}
	spareReady()
	first := create(t, m, "python", 0)
	if r := run(t, m, first, "x = 41"); r.Status != engine.StatusOK || r.KernelRestarted {
		t.Fatalf("the first call of a session that took a spare: status %s, interpreter_restarted %v (want the interpreter started ahead)", r.Status, r.KernelRestarted)
	}

	spareReady() // another is made behind the one taken
	withEnv := create(t, m, "python", 0)
	r, err := m.Run(ctx, engine.Request{SessionID: withEnv, Code: "import os; os.environ['GREETING']", Env: map[string]string{"GREETING": "hi"}}, engine.RunOptions{})
	if err != nil || r.Value != "'hi'" {
		t.Fatalf("a first call with its own environment, in a spare: %v, %+v", err, r)
	}

	spareReady()
	longIdle := create(t, m, "python", 2*config.Default().Sessions.IdleTimeoutSeconds)
	if r := run(t, m, longIdle, "1"); !r.KernelRestarted {
		t.Errorf("a session idle longer than a spare waits after a restart took one")
	}
	if n := m.SparesReady("python"); n != 1 {
		t.Errorf("%d spares ready after a session that may not take one", n)
	}

	if _, err := m.Pause(ctx, first); err != nil {
		t.Fatal(err)
	}
	if r := run(t, m, first, "x + 1"); r.Value != "42" || r.Resumed == nil || r.Resumed.CellsReplayed != 1 {
		t.Fatalf("the call that resumed the paused session: value %q, resumed %+v", r.Value, r.Resumed)
	}
	spareReady()
	f, err := m.Fork(ctx, first)
	if err != nil {
		t.Fatal(err)
	}
	if r := run(t, m, f.Session.SessionID, "x + 1"); r.Value != "42" {
		t.Errorf("the fork: %q", r.Value)
	}
	if r := run(t, m, first, "x"); r.Value != "41" {
		t.Errorf("the original after the fork: %q", r.Value)
	}
}
