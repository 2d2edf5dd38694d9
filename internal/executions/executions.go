// Package executions runs code that outlives a request: start_execution
// returns an id at once, get_execution reports status and output so far
// (and can wait for the end), cancel_execution stops it. Each execution
// keeps its output up to the operator's cap; finished executions are kept
// for a while, then forgotten.
package executions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Status values of an execution.
const (
	StatusRunning   = "running"
	StatusFinished  = "finished"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed" // the sandbox could not run it at all
)

// Snapshot is an execution as seen at one moment.
type Snapshot struct {
	ExecutionID     string         `json:"execution_id" jsonschema:"the execution's id"`
	Language        string         `json:"language" jsonschema:"canonical language name"`
	Status          string         `json:"status" jsonschema:"running, finished, cancelled or failed"`
	StartedAt       time.Time      `json:"started_at" jsonschema:"when it started"`
	EndedAt         *time.Time     `json:"ended_at,omitempty" jsonschema:"when it ended"`
	ElapsedMs       int64          `json:"elapsed_ms" jsonschema:"time since start, or the whole duration once ended"`
	Stage           string         `json:"stage,omitempty" jsonschema:"the stage producing output now: compile or run"`
	Stdout          string         `json:"stdout" jsonschema:"stdout from stdout_offset on, capped inline"`
	Stderr          string         `json:"stderr" jsonschema:"stderr from stderr_offset on, capped inline"`
	StdoutOffset    int64          `json:"stdout_offset" jsonschema:"byte offset of stdout in this answer"`
	StderrOffset    int64          `json:"stderr_offset" jsonschema:"byte offset of stderr in this answer"`
	StdoutBytes     int64          `json:"stdout_bytes" jsonschema:"stdout kept so far; pass it as stdout_offset next time to get only what is new"`
	StderrBytes     int64          `json:"stderr_bytes" jsonschema:"stderr kept so far; pass it as stderr_offset next time"`
	StdoutTruncated bool           `json:"stdout_truncated" jsonschema:"more stdout follows the inline part (read on with a larger stdout_offset)"`
	StderrTruncated bool           `json:"stderr_truncated" jsonschema:"more stderr follows the inline part"`
	Result          *engine.Result `json:"result,omitempty" jsonschema:"the run's full result once finished or cancelled"`
	Error           string         `json:"error,omitempty" jsonschema:"why the execution failed to run, when status is failed"`
	Owner           string         `json:"owner,omitempty" jsonschema:"the principal (token name or OAuth subject) whose execution it is; shown to operators only"`
}

// Execution is one run in the background.
type Execution struct {
	id       string
	owner    string // principal name
	language string
	started  time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	outCap   int

	mu        sync.Mutex
	stdout    []byte
	stderr    []byte
	stage     int
	stages    []string
	ended     time.Time
	cancelled bool
	result    *engine.Result
	err       error
}

func (x *Execution) onChunk(c sandbox.Chunk) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.stage = c.Stage
	buf := &x.stdout
	if c.Stream == sandbox.Stderr {
		buf = &x.stderr
	}
	if room := x.outCap - len(*buf); room > 0 {
		*buf = append(*buf, c.Data[:min(len(c.Data), room)]...)
	}
}

// Manager keeps executions.
type Manager struct {
	eng *engine.Engine
	cfg config.Config

	mu    sync.Mutex
	execs map[string]*Execution
	// claimed counts, per owner, the places makeRoom has granted that are
	// not registered yet (a start waiting for its run slot): the quota
	// counts them, so two starts at once cannot both take the last place.
	claimed map[string]int
	wg      sync.WaitGroup
}

// NewManager returns a manager running executions on eng.
func NewManager(eng *engine.Engine) *Manager {
	return &Manager{eng: eng, cfg: eng.Config(), execs: map[string]*Execution{}, claimed: map[string]int{}}
}

func invalid(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// Start validates req, takes a run slot (or answers busy) and starts the run
// in the background, owned by ctx's principal.
func (m *Manager) Start(ctx context.Context, req engine.Request) (Snapshot, error) {
	if err := m.eng.Validate(req, true); err != nil {
		return Snapshot{}, err
	}
	owner := principal.FromContext(ctx)
	if err := m.makeRoom(owner.Name); err != nil {
		return Snapshot{}, err
	}
	queued := time.Now()
	release, err := m.eng.Reserve(ctx)
	if err != nil {
		m.unclaim(owner.Name)
		return Snapshot{}, err
	}
	queueWait := time.Since(queued)
	work := func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		return m.eng.Run(ctx, req, engine.RunOptions{OnChunk: onChunk, Long: true, Release: release, QueueWait: queueWait})
	}
	return m.launch(ctx, owner.Name, req.Language, work), nil
}

// Work is what an execution runs: it gets the execution's context, which
// ends when the execution is cancelled, and the sink of its output, and
// returns the run's result.
type Work func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error)

// Track runs work in the background as an execution of ctx's principal,
// like Start: listed by list_executions, read by get_execution, stopped by
// cancel_execution and Shutdown, its output kept. Unlike Start it neither
// validates nor takes a run slot: work does (Tasks run run_code's own
// handler, which does both). language names the execution in listings.
func (m *Manager) Track(ctx context.Context, language string, work Work) (Snapshot, error) {
	owner := principal.FromContext(ctx)
	if err := m.makeRoom(owner.Name); err != nil {
		return Snapshot{}, err
	}
	return m.launch(ctx, owner.Name, language, work), nil
}

// launch registers an execution of owner, in the place makeRoom claimed,
// and runs work in the background.
func (m *Manager) launch(ctx context.Context, owner, language string, work Work) Snapshot {
	stages := []string{"run"}
	if lang, ok := m.eng.Registry().Lookup(language); ok {
		language = lang.Name
		if lang.Compiled() {
			stages = []string{"compile", "run"}
		}
	}
	limit := time.Duration(m.cfg.Executions.MaxDurationSeconds)*time.Second + time.Duration(m.cfg.Limits.CompileTimeoutSeconds)*time.Second + time.Minute
	// The run outlives the request but keeps its values (the principal,
	// for ownership, metrics and logs).
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	x := &Execution{
		id: newID(), owner: owner, language: language, started: time.Now(), cancel: cancel, done: make(chan struct{}),
		outCap: m.cfg.Limits.MaxOutputBytes, stages: stages,
	}
	m.mu.Lock()
	m.execs[x.id] = x
	m.unclaimLocked(owner)
	m.pruneLocked()
	m.mu.Unlock()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		defer cancel()
		res, err := work(runCtx, x.onChunk)
		x.mu.Lock()
		x.result, x.err, x.ended = res, err, time.Now()
		x.mu.Unlock()
		close(x.done)
	}()
	return m.snapshot(x, 0, 0)
}

// Running returns how many executions have not ended (metrics).
func (m *Manager) Running() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, x := range m.execs {
		select {
		case <-x.done:
		default:
			n++
		}
	}
	return n
}

// Get returns an execution, waiting up to wait for it to end, with output
// from the given offsets.
func (m *Manager) Get(ctx context.Context, id string, wait time.Duration, stdoutOffset, stderrOffset int64) (Snapshot, error) {
	if maxWait := time.Duration(m.cfg.Executions.MaxWaitSeconds) * time.Second; wait > maxWait {
		return Snapshot{}, invalid("wait_seconds %d is above the maximum of %d; poll again instead", int(wait.Seconds()), m.cfg.Executions.MaxWaitSeconds)
	}
	if wait < 0 || stdoutOffset < 0 || stderrOffset < 0 {
		return Snapshot{}, invalid("wait_seconds and the offsets must not be negative")
	}
	x, err := m.lookup(id, principal.FromContext(ctx).Uses)
	if err != nil {
		return Snapshot{}, err
	}
	if wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-x.done:
		case <-t.C:
		case <-ctx.Done():
		}
	}
	return m.snapshot(x, stdoutOffset, stderrOffset), nil
}

// Cancel stops a running execution (ctx's principal's own, or any for an
// operator) and waits briefly for its sandbox to go. An operator cancelling
// another principal's execution gets its status, not its output.
func (m *Manager) Cancel(ctx context.Context, id string) (Snapshot, error) {
	p := principal.FromContext(ctx)
	x, err := m.lookup(id, p.Owns)
	if err != nil {
		return Snapshot{}, err
	}
	view := func() Snapshot {
		s := m.snapshot(x, 0, 0)
		if !p.Uses(x.owner) {
			s = withoutOutput(s)
		}
		if p.Operator {
			s.Owner = x.owner
		}
		return s
	}
	select {
	case <-x.done:
		s := view()
		return s, invalid("execution %s already ended (status %s); nothing to cancel", id, s.Status)
	default:
	}
	x.mu.Lock()
	x.cancelled = true
	x.mu.Unlock()
	x.cancel()
	t := time.NewTimer(10 * time.Second)
	defer t.Stop()
	select {
	case <-x.done:
	case <-t.C:
	case <-ctx.Done():
	}
	return view(), nil
}

// withoutOutput is s as listings show it: sizes, no output.
func withoutOutput(s Snapshot) Snapshot {
	s.Stdout, s.Stderr, s.StdoutTruncated, s.StderrTruncated, s.Result = "", "", s.StdoutBytes > 0, s.StderrBytes > 0, nil
	return s
}

// List returns the executions kept of ctx's principal, newest first,
// without output; an operator sees every principal's, with their owners.
func (m *Manager) List(ctx context.Context) []Snapshot {
	p := principal.FromContext(ctx)
	m.mu.Lock()
	m.pruneLocked()
	xs := make([]*Execution, 0, len(m.execs))
	for _, x := range m.execs {
		if p.Owns(x.owner) {
			xs = append(xs, x)
		}
	}
	m.mu.Unlock()
	sort.Slice(xs, func(i, j int) bool { return xs[i].started.After(xs[j].started) })
	out := make([]Snapshot, 0, len(xs))
	for _, x := range xs {
		s := withoutOutput(m.snapshot(x, 0, 0))
		if p.Operator {
			s.Owner = x.owner
		}
		out = append(out, s)
	}
	return out
}

// Shutdown cancels every running execution and waits for them to end.
func (m *Manager) Shutdown(ctx context.Context) {
	m.mu.Lock()
	for _, x := range m.execs {
		x.cancel()
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// lookup finds an execution that allowed admits by its owner; another
// principal's execution is answered exactly like one that does not exist.
func (m *Manager) lookup(id string, allowed func(owner string) bool) (*Execution, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	x, ok := m.execs[id]
	if !ok || !allowed(x.owner) {
		return nil, invalid("unknown execution id %q: it never existed or ended more than %ds ago; list_executions shows those kept", id, m.cfg.Executions.RetentionSeconds)
	}
	return x, nil
}

// makeRoom forgets owner's oldest ended executions while owner is at its
// quota (quotas.executions_kept) and claims the place it made, which launch
// fills or unclaim gives back; with all of them still running (or claimed),
// it answers over quota.
func (m *Manager) makeRoom(owner string) error {
	q := m.cfg.Quotas.ExecutionsKept
	if q <= 0 {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pruneLocked()
	var own, ended []*Execution
	for _, x := range m.execs {
		if x.owner != owner {
			continue
		}
		own = append(own, x)
		x.mu.Lock()
		if !x.ended.IsZero() {
			ended = append(ended, x)
		}
		x.mu.Unlock()
	}
	over := len(own) + m.claimed[owner] - q + 1
	if over > len(ended) {
		return &engine.Error{Code: engine.CodeQuota, Message: fmt.Sprintf(
			"over quota: %q already has %d executions running or starting, its quota of executions kept; wait for one to end or cancel_execution one (list_executions shows them), or ask the operator to raise quotas.executions_kept", owner, len(own)-len(ended)+m.claimed[owner])}
	}
	if over > 0 {
		sort.Slice(ended, func(i, j int) bool { return ended[i].started.Before(ended[j].started) })
		for _, x := range ended[:over] {
			delete(m.execs, x.id)
		}
	}
	m.claimed[owner]++
	return nil
}

// unclaim gives back a place makeRoom claimed for owner when its execution
// will not start (no run slot).
func (m *Manager) unclaim(owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.unclaimLocked(owner)
}

func (m *Manager) unclaimLocked(owner string) {
	if m.claimed[owner] <= 1 {
		delete(m.claimed, owner) // also when the quota is off and nothing was claimed
		return
	}
	m.claimed[owner]--
}

// pruneLocked forgets finished executions past retention, and the oldest
// finished ones beyond MaxKept.
func (m *Manager) pruneLocked() {
	cutoff := time.Now().Add(-time.Duration(m.cfg.Executions.RetentionSeconds) * time.Second)
	var finished []*Execution
	for id, x := range m.execs {
		x.mu.Lock()
		ended := x.ended
		x.mu.Unlock()
		if ended.IsZero() {
			continue
		}
		if ended.Before(cutoff) {
			delete(m.execs, id)
			continue
		}
		finished = append(finished, x)
	}
	if over := len(m.execs) - m.cfg.Executions.MaxKept; over > 0 {
		sort.Slice(finished, func(i, j int) bool { return finished[i].started.Before(finished[j].started) })
		for i := 0; i < over && i < len(finished); i++ {
			delete(m.execs, finished[i].id)
		}
	}
}

func (m *Manager) snapshot(x *Execution, outOff, errOff int64) Snapshot {
	x.mu.Lock()
	defer x.mu.Unlock()
	s := Snapshot{ExecutionID: x.id, Language: x.language, StartedAt: x.started, Status: StatusRunning,
		StdoutBytes: int64(len(x.stdout)), StderrBytes: int64(len(x.stderr))}
	if x.stage < len(x.stages) {
		s.Stage = x.stages[x.stage]
	}
	inline := m.cfg.Limits.InlineOutputBytes
	s.Stdout, s.StdoutOffset, s.StdoutTruncated = window(x.stdout, outOff, inline)
	s.Stderr, s.StderrOffset, s.StderrTruncated = window(x.stderr, errOff, inline)
	end := time.Now()
	if !x.ended.IsZero() {
		end = x.ended
		t := x.ended
		s.EndedAt = &t
		s.Stage = ""
		switch {
		case x.cancelled:
			// A cancel that lands while the sandbox is still being made
			// ends the run with the cancellation's own error: it is still
			// a cancelled run, not a failed one.
			s.Status = StatusCancelled
		case x.err != nil:
			s.Status, s.Error = StatusFailed, x.err.Error()
		default:
			s.Status = StatusFinished
		}
		s.Result = x.result
	}
	s.ElapsedMs = end.Sub(x.started).Milliseconds()
	return s
}

// window returns up to limit bytes of data from off, the offset used, and
// whether more follows.
func window(data []byte, off int64, limit int) (string, int64, bool) {
	off = min(off, int64(len(data)))
	rest := data[off:]
	if len(rest) <= limit {
		return string(rest), off, false
	}
	return string(rest[:limit]), off, true
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}
