package executions_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// servers returns n managers on one engine's state store (store.Memory),
// as n servers sharing a store see it; the first is named "local" (the
// default), the others as given.
func servers(t *testing.T, names ...string) (*engine.Engine, []*executions.Manager) {
	t.Helper()
	cfg := config.Default()
	cfg.Executions.MaxWaitSeconds = 30
	e, _ := testutil.FakeEngine(t, &cfg)
	ms := []*executions.Manager{executions.NewManager(e)}
	for _, n := range names {
		ms = append(ms, executions.NewManager(e, executions.WithReplica(n)))
	}
	for _, m := range ms {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m.Shutdown(ctx)
		})
	}
	return e, ms
}

// blockingWork prints out and then waits for its context to end.
func blockingWork(out string) executions.Work {
	return func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte(out)})
		<-ctx.Done()
		return nil, ctx.Err()
	}
}

func TestAnotherServerOnTheStoreSeesAnExecutionFromItsStartAndCancelsIt(t *testing.T) {
	_, ms := servers(t, "other")
	here, there := ms[0], ms[1]
	alice, bob := as("alice", false), as("bob", false)
	s, err := here.Track(alice, "python", []string{"run"}, blockingWork("partial\n"))
	if err != nil {
		t.Fatal(err)
	}
	// Durable before the answer: the other server knows it at once.
	got, err := there.Get(alice, s.ExecutionID, 0, 0, 0)
	if err != nil || got.Status != executions.StatusRunning {
		t.Fatalf("the other server right after the start: %+v, %v", got, err)
	}
	testutil.Eventually(t, 10*time.Second, func() bool {
		got, _ = there.Get(alice, s.ExecutionID, 0, 0, 0)
		return got.Stdout == "partial\n"
	}, "the running execution's output on the other server")
	if _, err := there.Get(bob, s.ExecutionID, 0, 0, 0); err == nil {
		t.Error("bob reads alice's execution on the other server")
	}
	if list := there.List(alice); len(list) != 1 || list[0].ExecutionID != s.ExecutionID {
		t.Errorf("the other server lists %+v for alice", list)
	}
	if list := there.List(bob); len(list) != 0 {
		t.Errorf("the other server lists %+v for bob", list)
	}
	if _, err := there.Cancel(bob, s.ExecutionID); err == nil {
		t.Error("bob cancels alice's execution through the other server")
	}
	cancelled, err := there.Cancel(alice, s.ExecutionID)
	if err != nil || cancelled.Status != executions.StatusCancelled || cancelled.EndedAt == nil {
		t.Fatalf("cancelled through the other server: %+v, %v", cancelled, err)
	}
	if got, _ := here.Get(alice, s.ExecutionID, 0, 0, 0); got.Status != executions.StatusCancelled || got.Stdout != "partial\n" {
		t.Errorf("the running server after the cancel: %+v", got)
	}
}

func TestAFinishedExecutionIsReadFromTheStoreWithItsWholeOutput(t *testing.T) {
	e, ms := servers(t, "next")
	here, next := ms[0], ms[1]
	alice := as("alice", false)
	inline := e.Config().Limits.InlineOutputBytes
	long := strings.Repeat("x", 2*inline+7)
	s, err := here.Track(alice, "python", []string{"run"}, func(_ context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte(long)})
		onChunk(sandbox.Chunk{Stream: sandbox.Stderr, Data: []byte("warning\n")})
		return &engine.Result{Status: engine.StatusOK, Stage: engine.Stage{Stdout: "clipped"}}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := here.Get(alice, s.ExecutionID, 20*time.Second, 0, 0); got.Status != executions.StatusFinished {
		t.Fatalf("not finished: %+v", got)
	}
	var read strings.Builder
	for off := int64(0); ; {
		got, err := next.Get(alice, s.ExecutionID, 0, off, 0)
		if err != nil || got.Status != executions.StatusFinished || got.Result == nil || got.Result.Stdout != "clipped" || got.Stderr != "warning\n" {
			t.Fatalf("the next server: %+v, %v", got, err)
		}
		read.WriteString(got.Stdout)
		off = got.StdoutOffset + int64(len(got.Stdout))
		if !got.StdoutTruncated {
			break
		}
	}
	if read.String() != long {
		t.Errorf("the next server read %d bytes of stdout in windows, want %d", read.Len(), len(long))
	}
}

func TestRecoverEndsWhatAStoppedServerLeftRunningAsInterrupted(t *testing.T) {
	_, ms := servers(t, "gone", "alive", "local")
	crashed, gone, alive, restarted := ms[0], ms[1], ms[2], ms[3]
	alice := as("alice", false)
	ctx := context.Background()
	// "alive" beats; "gone" never did (its heartbeat expired).
	if err := alive.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	ids := map[string]string{}
	for name, m := range map[string]*executions.Manager{"crashed": crashed, "gone": gone, "alive": alive} {
		s, err := m.Track(alice, "python", []string{"run"}, blockingWork(name+" partial\n"))
		if err != nil {
			t.Fatal(err)
		}
		ids[name] = s.ExecutionID
		testutil.Eventually(t, 10*time.Second, func() bool {
			got, _ := restarted.Get(alice, s.ExecutionID, 0, 0, 0)
			return got.Stdout != ""
		}, name+"'s output in the store")
	}
	// The server after a restart has the crashed one's name ("local").
	if err := restarted.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"crashed", "gone"} {
		got, err := restarted.Get(alice, ids[name], 0, 0, 0)
		if err != nil || got.Status != executions.StatusInterrupted || got.Stdout != name+" partial\n" || got.EndedAt == nil ||
			!strings.Contains(got.Error, "stopped or restarted while it ran") {
			t.Errorf("%s's execution after the restart: %+v, %v; want interrupted with its output", name, got, err)
		}
	}
	if got, _ := restarted.Get(alice, ids["alive"], 0, 0, 0); got.Status != executions.StatusRunning {
		t.Errorf("a live replica's execution: %+v, want still running", got)
	}
}
