//go:build !fast

package containment_test

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil/testbackend"
)

// The battery on restored sandboxes: with MCR_TEST_RESTORED=1 (make
// test-go sets it for the whole battery, on the crun backend with the
// checkpoint tools), every hostile program runs in a session's sandbox
// that was checkpointed and restored just before: the session is made,
// paused (its sandbox checkpointed), and the program is its first call,
// which restores it; the session is closed after, which ends what the
// program left running. A test that runs no program in a session's
// sandbox (a burst of one-shot runs) fails in this mode, and make test
// leaves it out, as it does the test of the warm pool's own sandboxes.
const restoredEnv = "MCR_TEST_RESTORED"

// restoredMode says the battery runs its programs in restored sandboxes.
func restoredMode() bool { return os.Getenv(restoredEnv) == "1" }

// restoredSessions returns the sessions manager of a harness in restored
// mode, failing the test where checkpoints cannot work.
func restoredSessions(t *testing.T, e *engine.Engine) *sessions.Manager {
	t.Helper()
	if testbackend.RequireName(t) != config.BackendCrun {
		t.Fatalf("%s=1 needs the crun backend (%s=crun, or the default where crun serves)", restoredEnv, backendEnv)
	}
	c, ok := e.Backend().(sandbox.Checkpointer)
	if !ok {
		t.Fatalf("%s=1: the backend does not checkpoint", restoredEnv)
	}
	if err := c.CheckpointSupport(); err != nil {
		t.Fatalf("%s=1: checkpoints do not work here: %v", restoredEnv, err)
	}
	m := sessions.NewManager(e)
	t.Cleanup(m.Shutdown)
	// A test that ran no program in a restored sandbox proved nothing
	// about one: in restored mode it fails (make test leaves such tests
	// out by name, and docs/SECURITY.md says why).
	t.Cleanup(func() {
		if n, _ := restoredRuns.Load(t); n == nil || n.(*atomic.Int64).Load() == 0 {
			t.Errorf("%s=1: no program of this test ran in a restored sandbox", restoredEnv)
		}
	})
	return m
}

// restoredRuns counts, per test, the programs run in restored sandboxes.
var restoredRuns sync.Map // *testing.T -> *atomic.Int64

// runRestored runs req as the first call of a session whose sandbox was
// just checkpointed, and closes the session.
func (h *harness) runRestored(ctx context.Context, req engine.Request, opts engine.RunOptions) (*engine.Result, error) {
	t := h.t
	t.Helper()
	info, err := h.sessions.Create(ctx, req.Language, 0, sessions.Options{})
	if err != nil {
		return nil, err
	}
	defer func() { _, _ = h.sessions.Close(context.Background(), info.SessionID) }()
	if p, err := h.sessions.Pause(ctx, info.SessionID); err != nil || p.Mode != sessions.ModeRestored {
		t.Fatalf("pausing the session to restore: %+v, %v", p, err)
	}
	req.SessionID = info.SessionID
	n, _ := restoredRuns.LoadOrStore(t, new(atomic.Int64))
	n.(*atomic.Int64).Add(1)
	r, err := h.sessions.Run(ctx, req, opts)
	if err == nil && (r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored) {
		t.Fatalf("the program's call did not restore the sandbox: %+v", r.Resumed)
	}
	return r, err
}
