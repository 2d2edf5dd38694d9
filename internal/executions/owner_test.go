package executions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

func as(name string, operator bool) context.Context {
	return principal.WithContext(context.Background(), principal.Principal{Name: name, Operator: operator})
}

func TestExecutionsBelongToTheirPrincipal(t *testing.T) {
	cfg := config.Default()
	cfg.Executions.MaxWaitSeconds = 30
	cfg.Quotas.ExecutionsKept = 2
	cfg.Quotas.ConcurrentRuns = 2
	e, _ := testutil.FakeEngine(t, &cfg)
	m := executions.NewManager(e)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		m.Shutdown(ctx)
	})
	alice, bob, ops := as("alice", false), as("bob", false), as("ops", true)
	sleeper := engine.Request{Language: "bash", Code: "echo alice-secret; sleep 300", TimeoutSeconds: 600}
	x1, err := m.Start(alice, sleeper)
	if err != nil {
		t.Fatal(err)
	}
	// Running, past its sandbox's start: a cancel now is of a running program.
	testutil.Eventually(t, 60*time.Second, func() bool {
		s, err := m.Get(alice, x1.ExecutionID, 0, 0, 0)
		return err != nil || s.StdoutBytes > 0
	}, "alice's execution to print")
	x2, err := m.Start(alice, sleeper)
	if err != nil {
		t.Fatal(err)
	}

	// Alice holds two runs: both her quotas are full.
	if _, err := m.Start(alice, sleeper); err == nil || !strings.Contains(err.Error(), "quotas.executions_kept") || engine.CodeOf(err) != engine.CodeQuota {
		t.Errorf("alice's third execution: %v, want the executions_kept quota", err)
	}
	if _, err := e.Run(alice, engine.Request{Language: "bash", Code: "true"}, engine.RunOptions{}); err == nil || !strings.Contains(err.Error(), "quotas.concurrent_runs") || engine.CodeOf(err) != engine.CodeQuota {
		t.Errorf("alice's run beside two executions: %v, want the concurrent_runs quota", err)
	}
	// Bob is not affected.
	bx, err := m.Start(bob, engine.Request{Language: "bash", Code: "echo bob"})
	if err != nil {
		t.Fatalf("bob is refused while alice is at her quotas: %v", err)
	}
	if got, err := m.Get(bob, bx.ExecutionID, 30*time.Second, 0, 0); err != nil || got.Status != executions.StatusFinished || got.Result.Stdout != "bob\n" {
		t.Errorf("bob's execution: %+v, %v", got, err)
	}

	// Bob cannot see, read or cancel alice's: the answers are those of a
	// missing id.
	const missing = "exec-0000000000000000"
	_, missingGet := m.Get(bob, missing, 0, 0, 0)
	_, missingCancel := m.Cancel(bob, missing)
	_, err = m.Get(bob, x1.ExecutionID, 0, 0, 0)
	if err == nil || err.Error() != strings.ReplaceAll(missingGet.Error(), missing, x1.ExecutionID) {
		t.Errorf("bob reads alice's execution: %v", err)
	}
	_, err = m.Cancel(bob, x1.ExecutionID)
	if err == nil || err.Error() != strings.ReplaceAll(missingCancel.Error(), missing, x1.ExecutionID) {
		t.Errorf("bob cancels alice's execution: %v", err)
	}
	if got := m.List(bob); len(got) != 1 || got[0].ExecutionID != bx.ExecutionID || got[0].Owner != "" {
		t.Errorf("bob lists %+v, want only his own, without owners", got)
	}
	if got, _ := m.Get(alice, x1.ExecutionID, 0, 0, 0); got.Status != executions.StatusRunning {
		t.Errorf("alice's execution after bob's attempts: %+v", got)
	}

	// The operator lists everyone's and cancels alice's, without seeing its
	// output.
	owners := map[string]string{}
	for _, s := range m.List(ops) {
		owners[s.ExecutionID] = s.Owner
	}
	if owners[x1.ExecutionID] != "alice" || owners[x2.ExecutionID] != "alice" || owners[bx.ExecutionID] != "bob" {
		t.Errorf("the operator lists owners %v", owners)
	}
	if _, err := m.Get(ops, x1.ExecutionID, 0, 0, 0); err == nil {
		t.Error("the operator reads alice's output")
	}
	c, err := m.Cancel(ops, x1.ExecutionID)
	if err != nil || c.Status != executions.StatusCancelled || c.Owner != "alice" || c.Result != nil || strings.Contains(c.Stdout, "alice-secret") {
		t.Errorf("the operator cancels alice's execution: %+v, %v", c, err)
	}

	// x1 ended: alice's next execution pushes it out, not bob's.
	x3, err := m.Start(alice, engine.Request{Language: "bash", Code: "echo three"})
	if err != nil {
		t.Fatalf("alice's execution once one ended: %v", err)
	}
	if _, err := m.Get(alice, x1.ExecutionID, 0, 0, 0); err == nil {
		t.Error("alice's oldest ended execution kept past her quota")
	}
	if _, err := m.Get(bob, bx.ExecutionID, 0, 0, 0); err != nil {
		t.Errorf("alice's quota pushed out bob's execution: %v", err)
	}
	if got, err := m.Get(alice, x3.ExecutionID, 30*time.Second, 0, 0); err != nil || got.Result == nil || got.Result.Stdout != "three\n" {
		t.Errorf("alice's third execution: %+v, %v", got, err)
	}
	if _, err := m.Cancel(alice, x2.ExecutionID); err != nil {
		t.Errorf("alice cancels her own: %v", err)
	}
}
