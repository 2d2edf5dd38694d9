package executions_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// manager returns a manager on the fake backend (the real agent in this
// process, no Docker): executions are logic around the engine.
func manager(t *testing.T) (*executions.Manager, *fake.Backend) {
	t.Helper()
	cfg := config.Default()
	cfg.Executions.MaxWaitSeconds = 30
	e, b := testutil.FakeEngine(t, &cfg)
	m := executions.NewManager(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Shutdown(ctx)
	})
	return m, b
}

// waitOutput waits until the execution's stdout contains want.
func waitOutput(t *testing.T, m *executions.Manager, id, want string) executions.Snapshot {
	t.Helper()
	var snap executions.Snapshot
	testutil.Eventually(t, 30*time.Second, func() bool {
		snap, _ = m.Get(context.Background(), id, 0, 0, 0)
		return strings.Contains(snap.Stdout, want)
	}, "output "+want)
	return snap
}

func TestExecutionLifecycle(t *testing.T) {
	m, b := manager(t)
	ctx := context.Background()
	// The program ends once the test creates the file "release".
	s, err := m.Start(ctx, engine.Request{Language: "bash", TimeoutSeconds: 120,
		Code: `for i in 1 2 3; do echo "step $i"; done; until [ -e release ]; do sleep 0.01; done; echo done`})
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != executions.StatusRunning || s.ExecutionID == "" {
		t.Fatalf("start: %+v", s)
	}
	// Partial output of a running program.
	partial := waitOutput(t, m, s.ExecutionID, "step 3")
	if partial.Status != executions.StatusRunning || strings.Contains(partial.Stdout, "done") {
		t.Fatalf("partial: %+v", partial)
	}
	live := b.Live()
	if len(live) != 1 {
		t.Fatalf("sandboxes %v, want the execution's", live)
	}
	if err := os.WriteFile(filepath.Join(b.Workspace(live[0]), "release"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// Long poll to the end, asking only for output not yet seen.
	final, err := m.Get(ctx, s.ExecutionID, 20*time.Second, partial.StdoutBytes, 0)
	if err != nil {
		t.Fatal(err)
	}
	if final.Status != executions.StatusFinished || final.Result == nil || final.Result.Status != engine.StatusOK {
		t.Fatalf("final: %+v", final)
	}
	if final.StdoutOffset != partial.StdoutBytes || final.Stdout != "done\n" {
		t.Errorf("incremental stdout %q from %d", final.Stdout, final.StdoutOffset)
	}
	if final.Result.Stdout != "step 1\nstep 2\nstep 3\ndone\n" {
		t.Errorf("result stdout %q", final.Result.Stdout)
	}
	if _, err := m.Cancel(ctx, s.ExecutionID); err == nil || !strings.Contains(err.Error(), "already ended") {
		t.Errorf("cancelling a finished execution: %v", err)
	}
	if list := m.List(ctx); len(list) != 1 || list[0].ExecutionID != s.ExecutionID {
		t.Errorf("list: %+v", list)
	}
}

func TestExecutionCancel(t *testing.T) {
	m, _ := manager(t)
	ctx := context.Background()
	s, err := m.Start(ctx, engine.Request{Language: "bash", Code: `echo before; sleep 300`})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, m, s.ExecutionID, "before")
	start := time.Now()
	c, err := m.Cancel(ctx, s.ExecutionID)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("cancel took %s", took)
	}
	if c.Status != executions.StatusCancelled || c.Result == nil || c.Result.Stdout != "before\n" {
		t.Errorf("cancelled: %+v", c)
	}
}

func TestExecutionBadInput(t *testing.T) {
	m, _ := manager(t)
	ctx := context.Background()
	cases := []struct {
		name string
		call func() error
		want string
	}{
		{"unknown id", func() error { _, err := m.Get(ctx, "exec-nope", 0, 0, 0); return err }, "unknown execution id"},
		{"cancel unknown", func() error { _, err := m.Cancel(ctx, "exec-nope"); return err }, "unknown execution id"},
		{"wait above max", func() error { _, err := m.Get(ctx, "exec-nope", time.Hour, 0, 0); return err }, "above the maximum"},
		{"bad request", func() error { _, err := m.Start(ctx, engine.Request{Language: "intercal", Code: "x"}); return err }, "unknown language"},
		{"timeout above max duration", func() error {
			_, err := m.Start(ctx, engine.Request{Language: "bash", Code: "x", TimeoutSeconds: 100000})
			return err
		}, "maximum of 1800"},
	}
	for _, c := range cases {
		if err := c.call(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}
