package metrics

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/pool"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func TestPrincipalLabelsAreCapped(t *testing.T) {
	m := New(Options{MaxPrincipals: 2})
	for i := range 5 {
		ctx := principal.WithContext(context.Background(), principal.Principal{Name: fmt.Sprintf("user-%d", i)})
		m.RunDone(ctx, engine.RunStats{Language: "python", Status: engine.StatusOK})
	}
	// A principal seen before the cap keeps its label afterwards.
	m.RunDone(principal.WithContext(context.Background(), principal.Principal{Name: "user-0"}), engine.RunStats{Language: "python", Status: engine.StatusOK})
	for label, want := range map[string]float64{"user-0": 2, "user-1": 1, OtherPrincipal: 3} {
		if got := testutil.ToFloat64(m.runs.WithLabelValues("python", "ok", label)); got != want {
			t.Errorf("runs of principal %s: %v, want %v", label, got, want)
		}
	}
	if n := testutil.CollectAndCount(m.runs); n != 3 {
		t.Errorf("%d run series, want 3 (two principals and other)", n)
	}
}

func TestRunDoneObservesOnlyStagesReached(t *testing.T) {
	m := New(Options{})
	m.RunDone(context.Background(), engine.RunStats{Status: engine.CodeInvalid})
	m.RunDone(context.Background(), engine.RunStats{Language: "bash", Status: engine.CodeBusy, Reached: engine.StageQueued, QueueWait: time.Second})
	m.RunDone(context.Background(), engine.RunStats{Language: "bash", Status: engine.StatusOK, Warm: true,
		Reached: engine.StageQueued | engine.StageAcquired | engine.StageExecuted, StdoutBytes: 6, StderrBytes: 1})
	if got := testutil.ToFloat64(m.runs.WithLabelValues("unknown", engine.CodeInvalid, principal.LocalName)); got != 1 {
		t.Errorf("refused run before validation: %v, want 1 under language unknown", got)
	}
	if n := testutil.CollectAndCount(m.queueWait); n != 1 {
		t.Errorf("queue wait series: %d, want 1", n)
	}
	wantExec := `
# HELP mcr_run_output_bytes_total Bytes programs wrote, by language and stream (stdout, stderr).
# TYPE mcr_run_output_bytes_total counter
mcr_run_output_bytes_total{language="bash",stream="stderr"} 1
mcr_run_output_bytes_total{language="bash",stream="stdout"} 6
`
	if err := testutil.CollectAndCompare(m.outputBytes, strings.NewReader(wantExec)); err != nil {
		t.Error(err)
	}
	if got := testutil.CollectAndCount(m.exec); got != 1 {
		t.Errorf("exec series: %d, want 1 (only the run that executed)", got)
	}
}

func TestRejectionsAreCountedByReason(t *testing.T) {
	m := New(Options{})
	statuses := []int{http.StatusUnauthorized, http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusForbidden, http.StatusOK}
	for _, code := range statuses {
		h := m.CountRejections(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(code) }))
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest(http.MethodPost, "/mcp", nil))
	}
	m.ToolCall("run_code", engine.CodeBusy)
	m.ToolCall("create_session", ReasonQuota)
	m.ToolCall("run_code", "")
	for reason, want := range map[string]float64{ReasonAuth: 2, ReasonRate: 1, ReasonForbidden: 1, ReasonBusy: 1, ReasonQuota: 1} {
		if got := testutil.ToFloat64(m.rejected.WithLabelValues(reason)); got != want {
			t.Errorf("rejected %s: %v, want %v", reason, got, want)
		}
	}
}

func TestPoolCollectorReadsStats(t *testing.T) {
	m := New(Options{})
	m.WatchPool(func() []pool.Stat {
		return []pool.Stat{{Language: "python", Size: 2, MaxSize: 16, Idle: 1, Creating: 1, Served: 7, Replaced: 2, Waited: 3, Error: "image missing",
			GrowBlocked: "stays at 2 of at most 16: memory: 900 MiB available, ..."}}
	})
	want := `
# HELP mcr_pool_idle Idle sandboxes ready for a run.
# TYPE mcr_pool_idle gauge
mcr_pool_idle{language="python"} 1
# HELP mcr_pool_served_total Sandboxes handed to runs.
# TYPE mcr_pool_served_total counter
mcr_pool_served_total{language="python"} 7
# HELP mcr_pool_failing 1 while the pool cannot create sandboxes (see the server's log), else 0.
# TYPE mcr_pool_failing gauge
mcr_pool_failing{language="python"} 1
# HELP mcr_pool_max_size How many idle sandboxes the pool may grow to while runs wait.
# TYPE mcr_pool_max_size gauge
mcr_pool_max_size{language="python"} 16
# HELP mcr_pool_waited_total Runs that found the pool empty and waited for a sandbox to be made.
# TYPE mcr_pool_waited_total counter
mcr_pool_waited_total{language="python"} 3
# HELP mcr_pool_grow_blocked 1 while runs wait and the pool cannot grow, with the reason (memory, pids; doctor and the server's log say more), else 0.
# TYPE mcr_pool_grow_blocked gauge
mcr_pool_grow_blocked{language="python",reason="memory"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "mcr_pool_idle", "mcr_pool_served_total", "mcr_pool_failing",
		"mcr_pool_max_size", "mcr_pool_waited_total", "mcr_pool_grow_blocked"); err != nil {
		t.Error(err)
	}
}

// fakeBackend makes sandboxes that answer session calls, to check that the
// timing wrapper passes them on.
type fakeBackend struct{ sandbox.Backend }

type fakeSession struct{ sandbox.Sandbox }

func (fakeSession) Close() {}

func (fakeSession) Call(context.Context, sandbox.Job, func(sandbox.Chunk)) (*sandbox.Result, error) {
	return &sandbox.Result{AgentError: "called"}, nil
}

func (fakeBackend) Create(context.Context, sandbox.Template) (sandbox.Sandbox, error) {
	return fakeSession{}, nil
}

func TestBackendTimesCreateAndRemoveAndKeepsSessions(t *testing.T) {
	m := New(Options{})
	sb, err := m.Backend(fakeBackend{}).Create(context.Background(), sandbox.Template{Purpose: "session-python"})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := sb.Call(context.Background(), sandbox.Job{}, nil); err != nil || res.AgentError != "called" {
		t.Fatalf("a session call through the wrapper: %v %+v", err, res)
	}
	sb.Close()
	sb.Close() // the second Close removes nothing and is not observed
	if n := testutil.CollectAndCount(m.sandboxCreate); n != 1 {
		t.Errorf("create series: %d, want 1 (purpose session)", n)
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "mcr_sandbox_remove_seconds" {
			if c := mf.GetMetric()[0].GetHistogram().GetSampleCount(); c != 1 {
				t.Errorf("removals observed: %d, want 1", c)
			}
			return
		}
	}
	t.Error("mcr_sandbox_remove_seconds not gathered")
}
