//go:build !fast

package executions_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/executions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestAnExecutionThatEndsWhileTheStoreIsAwayIsKeptAndWrittenWhenItReturns:
// a real etcd stops while an execution runs; the execution still ends,
// its server answers for it with its output, and once etcd is back the end
// is in the store, where another server reads it: nothing a client was
// told about is dropped.
func TestAnExecutionThatEndsWhileTheStoreIsAwayIsKeptAndWrittenWhenItReturns(t *testing.T) {
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	st, err := store.OpenEtcd(config.Etcd{Endpoints: []string{etcd.Endpoint}, Prefix: "away/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := config.Default()
	cfg.Executions.MaxWaitSeconds = 60
	testutil.Unhurried(&cfg)
	eng := engine.New(cfg, languages.Builtin(), testutil.FakeBackend(t), nil, engine.WithStore(st))
	here := executions.NewManager(eng, executions.WithReplica("here"))
	there := executions.NewManager(eng, executions.WithReplica("there"))
	for _, m := range []*executions.Manager{here, there} {
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			m.Shutdown(ctx)
		})
	}
	alice := as("alice", false)
	release := make(chan struct{})
	s, err := here.Track(alice, "python", []string{"run"}, func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("before the outage\n")})
		select {
		case <-release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("during the outage\n")})
		return &engine.Result{Status: engine.StatusOK}, nil
	})
	if err != nil {
		t.Fatal(err)
	}

	etcd.Stop()
	close(release)
	const want = "before the outage\nduring the outage\n"
	got, err := here.Get(alice, s.ExecutionID, 60*time.Second, 0, 0)
	if err != nil || got.Status != executions.StatusFinished || got.Stdout != want {
		t.Fatalf("its server, with the store away: %+v, %v", got, err)
	}
	if _, err := there.Get(alice, s.ExecutionID, 0, 0, 0); err == nil {
		t.Error("another server read the execution from a store that was away")
	}

	if err := etcd.Restart(); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 90*time.Second, func() bool {
		got, err = there.Get(alice, s.ExecutionID, 0, 0, 0)
		return err == nil && got.Status == executions.StatusFinished
	}, "the execution's end in the store once it answers again")
	if got.Stdout != want {
		t.Errorf("another server reads %q, want %q", got.Stdout, want)
	}
	if got, err := here.Get(alice, s.ExecutionID, 0, 0, 0); err != nil || got.Status != executions.StatusFinished || got.Stdout != want {
		t.Errorf("its server after the store returned: %+v, %v", got, err)
	}
}
