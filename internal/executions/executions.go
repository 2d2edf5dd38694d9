// Package executions runs code that outlives a request: start_execution
// returns an id at once, get_execution reports status and output so far
// (and can wait for the end), cancel_execution stops it. Each execution
// keeps its output up to the operator's cap; finished executions are kept
// for a while, then forgotten.
//
// Every execution is a record in the state store (internal/store), written
// before start_execution answers, updated as it runs and final before
// anyone is told it ended: get_execution, list_executions and
// cancel_execution on any server sharing the store, or on the next server
// after a restart, find it by its id. The replica running an execution
// also keeps it in memory while it runs (the freshest output, its cancel
// function).
package executions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"sort"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Status values of an execution.
const (
	StatusRunning   = "running"
	StatusFinished  = "finished"
	StatusCancelled = "cancelled"
	StatusFailed    = "failed" // the sandbox could not run it at all
	// StatusInterrupted is an execution whose server stopped (a restart,
	// a crash, a shutdown) before it ended: it keeps the output received
	// until then, and Error says why.
	StatusInterrupted = "interrupted"
)

// Snapshot is an execution as seen at one moment.
type Snapshot struct {
	ExecutionID     string         `json:"execution_id" jsonschema:"the execution's id"`
	Language        string         `json:"language" jsonschema:"canonical language name"`
	Status          string         `json:"status" jsonschema:"running, finished, cancelled, failed, or interrupted (the server stopped or restarted while it ran: the output received until then is kept)"`
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
	Error           string         `json:"error,omitempty" jsonschema:"why the execution failed to run, when status is failed, or why it was interrupted"`
	Owner           string         `json:"owner,omitempty" jsonschema:"the principal (token name or OAuth subject) whose execution it is; shown to operators only"`
	// MemoryBytes is the memory a running execution's sandbox uses now,
	// where this server runs it and its backend reads it from the host (0
	// otherwise), for the operator console; clients do not see it.
	MemoryBytes uint64 `json:"-"`
}

// record is an execution in the state store, under recordKey(id); its
// output is two blobs beside it (outputPrefix), of StdoutBytes and
// StderrBytes bytes.
type record struct {
	ID       string `json:"id"`
	Owner    string `json:"owner"`
	Language string `json:"language"`
	// Summary names the request (its size, files, time limit), for
	// operators reading the store.
	Summary string   `json:"summary,omitempty"`
	Stages  []string `json:"stages"`
	// Replica is the server running it: while its heartbeat lives, the
	// execution is that server's to end.
	Replica     string         `json:"replica"`
	Status      string         `json:"status"`
	Started     time.Time      `json:"started"`
	Ended       time.Time      `json:"ended,omitzero"`
	Stage       int            `json:"stage"`
	StdoutBytes int            `json:"stdout_bytes"`
	StderrBytes int            `json:"stderr_bytes"`
	Result      *engine.Result `json:"result,omitempty"`
	Error       string         `json:"error,omitempty"`
	// CancelRequested is set by a cancel_execution that reached another
	// replica; the running replica sees it at its next flush.
	CancelRequested bool `json:"cancel_requested,omitempty"`
}

const (
	recordPrefix = "executions/"
	outputRoot   = "execution-output/"
	// flushInterval bounds how often a running execution's output and
	// stage are written to the store: at most this often, and at its end.
	flushInterval = 250 * time.Millisecond
	// storeTimeout bounds one store operation of a background write.
	storeTimeout = 30 * time.Second
	// finalWriteTimeout bounds the first write of an execution's end, which
	// its waiters wait for; after it the end is retried in the background,
	// at most maxFinalRetryDelay apart.
	finalWriteTimeout  = 5 * time.Second
	maxFinalRetryDelay = 5 * time.Second
	// remoteCancelWait bounds how long cancel_execution waits for another
	// replica to end the execution.
	remoteCancelWait = 10 * time.Second
)

func recordKey(id string) string { return recordPrefix + id }

func outputPrefix(id, stream string) string { return outputRoot + id + "/" + stream }

// Execution is one run in the background on this replica.
type Execution struct {
	id       string
	owner    string // principal name
	language string
	summary  string
	started  time.Time
	cancel   context.CancelFunc
	done     chan struct{}
	outCap   int
	// sandbox is the sandbox its run's job went to, where the execution
	// hears of it (Start's; nil for Track's), for its memory use.
	sandbox *sandboxWatch

	mu          sync.Mutex
	stdout      []byte
	stderr      []byte
	stage       int
	stages      []string
	ended       time.Time
	cancelled   bool
	interrupted string // why the server ended it (its shutdown)
	result      *engine.Result
	err         error
	// flushed* are the bytes and stage already in the store.
	flushedOut, flushedErr, flushedStage int
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

// recordLocked is x as the store keeps it, output sizes included.
func (x *Execution) recordLocked(replica string) record {
	r := record{ID: x.id, Owner: x.owner, Language: x.language, Summary: x.summary, Stages: x.stages, Replica: replica,
		Status: StatusRunning, Started: x.started, Stage: x.stage, StdoutBytes: len(x.stdout), StderrBytes: len(x.stderr)}
	if !x.ended.IsZero() {
		r.Ended, r.Result = x.ended, x.result
		switch {
		case x.interrupted != "":
			r.Status, r.Error = StatusInterrupted, x.interrupted
		case x.cancelled:
			// A cancel that lands while the sandbox is still being made
			// ends the run with the cancellation's own error: it is still
			// a cancelled run, not a failed one.
			r.Status = StatusCancelled
		case x.err != nil:
			r.Status, r.Error = StatusFailed, x.err.Error()
		default:
			r.Status = StatusFinished
		}
	}
	return r
}

// Option configures a Manager.
type Option func(*Manager)

// WithReplica names the server in the records of the executions it runs
// (default "local"). A replica sharing an etcd store needs a name of its
// own; a server on the embedded store keeps the same name across restarts,
// so that the next server ends what the last one left running.
func WithReplica(id string) Option { return func(m *Manager) { m.replica = id } }

// WithLogger logs the manager's store failures to log.
func WithLogger(log *slog.Logger) Option { return func(m *Manager) { m.log = log } }

// Manager keeps executions.
type Manager struct {
	eng     *engine.Engine
	cfg     config.Config
	st      store.Store
	replica string
	log     *slog.Logger

	mu    sync.Mutex
	execs map[string]*Execution // running on this replica, or not yet final in the store
	// claimed counts, per owner, the places makeRoom has granted that are
	// not registered yet (a start waiting for its run slot): the quota
	// counts them, so two starts at once cannot both take the last place.
	claimed map[string]int
	wg      sync.WaitGroup

	// heartbeat marks this server live in the store while it runs
	// executions; Recover starts it and Shutdown ends it.
	heartbeat *replicas.Heartbeat
}

// NewManager returns a manager running executions on eng, keeping them in
// eng's state store.
func NewManager(eng *engine.Engine, opts ...Option) *Manager {
	m := &Manager{eng: eng, cfg: eng.Config(), st: eng.Store(), replica: "local", log: slog.New(slog.DiscardHandler),
		execs: map[string]*Execution{}, claimed: map[string]int{}}
	for _, o := range opts {
		o(m)
	}
	m.heartbeat = replicas.NewHeartbeat(m.st, m.replica, m.log)
	return m
}

func invalid(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

func unavailable(err error) error {
	return &engine.Error{Code: engine.CodeUnavailable, Message: fmt.Sprintf("the server's state store did not answer (%v); try again shortly", err)}
}

// retention is how long a finished execution stays readable.
func (m *Manager) retention() time.Duration {
	return time.Duration(m.cfg.Executions.RetentionSeconds) * time.Second
}

// Start validates req, takes a run slot (or answers busy) and starts the run
// in the background, owned by ctx's principal.
func (m *Manager) Start(ctx context.Context, req engine.Request) (Snapshot, error) {
	plan, err := m.eng.Prepare(ctx, req, true)
	if err != nil {
		return Snapshot{}, err
	}
	owner := principal.FromContext(ctx)
	if err := m.makeRoom(ctx, owner.Name); err != nil {
		return Snapshot{}, err
	}
	queued := time.Now()
	release, err := m.eng.Reserve(ctx)
	if err != nil {
		m.unclaim(owner.Name)
		return Snapshot{}, err
	}
	queueWait := time.Since(queued)
	watch := &sandboxWatch{}
	work := func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error) {
		return m.eng.RunPlan(ctx, plan, engine.RunOptions{OnChunk: onChunk, Release: release, QueueWait: queueWait, OnSandbox: watch.heard})
	}
	summary := fmt.Sprintf("start_execution: %d bytes of code, %d files, %d args, timeout %ds", len(req.Code), len(req.Files), len(req.Args), req.TimeoutSeconds)
	if req.SessionID != "" {
		summary += ", session " + req.SessionID
	}
	s, err := m.launch(ctx, owner.Name, plan.Language.Name, plan.Stages(), summary, work, watch)
	if err != nil {
		release.Release()
	}
	return s, err
}

// Work is what an execution runs: it gets the execution's context, which
// ends when the execution is cancelled, and the sink of its output, and
// returns the run's result.
type Work func(ctx context.Context, onChunk func(sandbox.Chunk)) (*engine.Result, error)

// Track runs work in the background as an execution of ctx's principal,
// like Start: listed by list_executions, read by get_execution, stopped by
// cancel_execution and Shutdown, its output kept. Unlike Start it neither
// validates nor takes a run slot: work does (Tasks run run_code's own
// handler, which does both). language and stages name the execution in
// listings, as the call's plan resolved them: Track looks nothing up.
func (m *Manager) Track(ctx context.Context, language string, stages []string, work Work) (Snapshot, error) {
	owner := principal.FromContext(ctx)
	if err := m.makeRoom(ctx, owner.Name); err != nil {
		return Snapshot{}, err
	}
	return m.launch(ctx, owner.Name, language, stages, "task", work, nil)
}

// sandboxWatch keeps the sandbox an execution's run's job went to
// (engine.RunOptions's OnSandbox), for reading its memory use while it
// runs.
type sandboxWatch struct {
	mu sync.Mutex
	sb sandbox.Sandbox
}

func (w *sandboxWatch) heard(sb sandbox.Sandbox) {
	w.mu.Lock()
	w.sb = sb
	w.mu.Unlock()
}

// memoryUsage is the memory the sandbox uses now, or 0 when there is none
// yet or its backend cannot read it.
func (w *sandboxWatch) memoryUsage() uint64 {
	if w == nil {
		return 0
	}
	w.mu.Lock()
	sb := w.sb
	w.mu.Unlock()
	if sb == nil {
		return 0
	}
	n, _ := sandbox.MemoryUsage(sb)
	return n
}

// launch records an execution of owner in the store, in the place makeRoom
// claimed, and runs work in the background; language and stages name it, and
// watch, when not nil, hears of its sandbox.
// The record is durable before launch returns: the id it answers can be
// read at once on any replica.
func (m *Manager) launch(ctx context.Context, owner, language string, stages []string, summary string, work Work, watch *sandboxWatch) (Snapshot, error) {
	limit := time.Duration(m.cfg.Executions.MaxDurationSeconds)*time.Second + time.Duration(m.cfg.Limits.CompileTimeoutSeconds)*time.Second + time.Minute
	// The run outlives the request but keeps its values (the principal,
	// for ownership, metrics and logs).
	runCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), limit)
	x := &Execution{
		id: newID(), owner: owner, language: language, summary: summary, started: time.Now(), cancel: cancel, done: make(chan struct{}),
		outCap: m.cfg.Limits.MaxOutputBytes, stages: stages, sandbox: watch,
	}
	x.mu.Lock()
	rec := x.recordLocked(m.replica)
	x.mu.Unlock()
	if err := m.putRecord(ctx, rec, true); err != nil {
		cancel()
		m.unclaim(owner)
		return Snapshot{}, unavailable(err)
	}
	m.mu.Lock()
	m.execs[x.id] = x
	m.unclaimLocked(owner)
	m.mu.Unlock()
	m.prune(ctx)
	m.wg.Go(func() {
		defer cancel()
		flushed := make(chan struct{})
		stopFlush := make(chan struct{})
		go func() {
			defer close(flushed)
			m.flushLoop(x, stopFlush)
		}()
		res, err := work(runCtx, x.onChunk)
		if watch != nil {
			watch.heard(nil) // the sandbox is gone; the execution keeps no hold on it
		}
		x.mu.Lock()
		x.result, x.err, x.ended = res, err, time.Now()
		x.mu.Unlock()
		close(stopFlush)
		<-flushed
		m.finish(x)
	})
	return m.localSnapshot(x, 0, 0), nil
}

// putRecord writes rec; create refuses to replace one (ids are random, so
// a clash is a bug, not a race to lose quietly).
func (m *Manager) putRecord(ctx context.Context, rec record, create bool) error {
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if create {
		return m.st.Create(ctx, recordKey(rec.ID), data, 0)
	}
	return m.st.Put(ctx, recordKey(rec.ID), data, 0)
}

// flushLoop writes x's new output and stage to the store every
// flushInterval until stop, and acts on a cancel another replica asked for.
func (m *Manager) flushLoop(x *Execution, stop <-chan struct{}) {
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		if err := m.flush(ctx, x); err != nil {
			m.log.Warn("an execution's progress was not written to the store; retrying", "execution", x.id, "err", err)
		}
		cancel()
	}
}

// flush writes the output chunks x received since the last flush, then the
// record's sizes and stage (the chunks first: a reader never sees a size
// whose bytes are not there).
func (m *Manager) flush(ctx context.Context, x *Execution) error {
	x.mu.Lock()
	out, errOut, stage := x.stdout, x.stderr, x.stage
	fromOut, fromErr, fromStage := x.flushedOut, x.flushedErr, x.flushedStage
	x.mu.Unlock()
	changed := len(out) != fromOut || len(errOut) != fromErr || stage != fromStage
	if changed {
		if err := m.putChunks(ctx, outputPrefix(x.id, "stdout"), out, fromOut, 0); err != nil {
			return err
		}
		if err := m.putChunks(ctx, outputPrefix(x.id, "stderr"), errOut, fromErr, 0); err != nil {
			return err
		}
	}
	cancelAsked := false
	update := func(old []byte) ([]byte, error) {
		var r record
		if old == nil || json.Unmarshal(old, &r) != nil {
			return nil, fmt.Errorf("execution %s: its record is gone from the store", x.id)
		}
		cancelAsked = r.CancelRequested
		if !changed {
			return old, nil
		}
		r.StdoutBytes, r.StderrBytes, r.Stage = len(out), len(errOut), stage
		return json.Marshal(r)
	}
	var err error
	if changed {
		err = m.st.Update(ctx, recordKey(x.id), 0, update)
	} else {
		var raw []byte
		if raw, err = m.st.Get(ctx, recordKey(x.id)); err == nil {
			_, err = update(raw)
		}
	}
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.flushedOut, x.flushedErr, x.flushedStage = len(out), len(errOut), stage
	running := x.ended.IsZero()
	if cancelAsked && running && !x.cancelled {
		x.cancelled = true
		x.mu.Unlock()
		m.log.Info("cancelling an execution as another replica asked", "execution", x.id, "owner", x.owner)
		x.cancel()
		return nil
	}
	x.mu.Unlock()
	return nil
}

// putChunks writes the chunks of data from byte from on (the chunk that
// holds it, rewritten, and every later one) under prefix.
func (m *Manager) putChunks(ctx context.Context, prefix string, data []byte, from int, ttl time.Duration) error {
	for i := from / store.ChunkSize; i*store.ChunkSize < len(data); i++ {
		if err := m.st.Put(ctx, store.ChunkKey(prefix, i), data[i*store.ChunkSize:min(len(data), (i+1)*store.ChunkSize)], ttl); err != nil {
			return err
		}
	}
	return nil
}

// finish writes x's final state to the store (its output and record with
// the retention as TTL), then tells the waiters it ended. While the store
// refuses, x stays in this replica's memory, which answers for it.
func (m *Manager) finish(x *Execution) {
	x.mu.Lock()
	rec := x.recordLocked(m.replica)
	out, errOut := x.stdout, x.stderr
	x.mu.Unlock()
	write := func(timeout time.Duration) error {
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		return m.writeFinal(ctx, rec, out, errOut)
	}
	err := write(finalWriteTimeout)
	if err == nil {
		m.mu.Lock()
		delete(m.execs, x.id)
		m.mu.Unlock()
		close(x.done)
		return
	}
	// The store is away. This replica keeps the execution and answers for
	// it (its waiters learn the end now), and writes the end when the store
	// answers again: nothing a client was told about is dropped.
	m.log.Warn("an execution's end was not written to the state store; this server keeps it and retries until the store answers", "execution", x.id, "owner", x.owner, "err", err)
	close(x.done)
	for delay := time.Second; ; delay = min(2*delay, maxFinalRetryDelay) {
		select {
		case <-m.heartbeat.Stopped():
			m.log.Error("the server stopped before the state store took an execution's end: its record says running until a server finds it interrupted", "execution", x.id, "owner", x.owner)
			return
		case <-time.After(delay):
		}
		if err := write(storeTimeout); err != nil {
			continue
		}
		m.mu.Lock()
		delete(m.execs, x.id)
		m.mu.Unlock()
		m.log.Info("an execution's end was written to the state store after it answered again", "execution", x.id)
		return
	}
}

// writeFinal writes an ended execution's output and record, both kept for
// the retention from now. A cancel asked meanwhile is dropped with the
// record's running state.
func (m *Manager) writeFinal(ctx context.Context, rec record, out, errOut []byte) error {
	ttl := m.retention()
	if err := m.putChunks(ctx, outputPrefix(rec.ID, "stdout"), out, 0, ttl); err != nil {
		return err
	}
	if err := m.putChunks(ctx, outputPrefix(rec.ID, "stderr"), errOut, 0, ttl); err != nil {
		return err
	}
	data, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return m.st.Put(ctx, recordKey(rec.ID), data, ttl)
}

// Running returns how many executions have not ended on this replica
// (metrics).
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

// found is an execution looked up by id: this replica's own (x), or the
// store's record of it.
type found struct {
	x   *Execution
	rec record
}

func (f found) owner() string {
	if f.x != nil {
		return f.x.owner
	}
	return f.rec.Owner
}

func (f found) running() bool {
	if f.x != nil {
		select {
		case <-f.x.done:
			return false
		default:
			return true
		}
	}
	return f.rec.Status == StatusRunning
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
	allowed := principal.FromContext(ctx).Uses
	f, err := m.lookup(ctx, id, allowed)
	if err != nil {
		return Snapshot{}, err
	}
	if wait > 0 && f.running() {
		if f, err = m.waitEnd(ctx, f, wait, allowed); err != nil {
			return Snapshot{}, err
		}
	}
	return m.snapshotOf(ctx, f, stdoutOffset, stderrOffset), nil
}

// waitEnd waits up to wait for an execution to end: on the done channel of
// this replica's own, by polling the store for another's.
func (m *Manager) waitEnd(ctx context.Context, f found, wait time.Duration, allowed func(string) bool) (found, error) {
	t := time.NewTimer(wait)
	defer t.Stop()
	if f.x != nil {
		select {
		case <-f.x.done:
		case <-t.C:
		case <-ctx.Done():
		}
		return m.lookup(ctx, f.x.id, allowed)
	}
	poll := time.NewTicker(flushInterval)
	defer poll.Stop()
	for f.running() {
		select {
		case <-t.C:
			return f, nil
		case <-ctx.Done():
			return f, nil
		case <-poll.C:
		}
		next, err := m.lookup(ctx, f.rec.ID, allowed)
		if err != nil {
			return f, err
		}
		f = next
	}
	return f, nil
}

// Cancel stops a running execution (ctx's principal's own, or any for an
// operator) and waits briefly for its sandbox to go. An operator cancelling
// another principal's execution gets its status, not its output. An
// execution another replica runs is asked to stop through its record.
func (m *Manager) Cancel(ctx context.Context, id string) (Snapshot, error) {
	p := principal.FromContext(ctx)
	f, err := m.lookup(ctx, id, p.Owns)
	if err != nil {
		return Snapshot{}, err
	}
	view := func(f found) Snapshot {
		s := m.snapshotOf(ctx, f, 0, 0)
		if !p.Uses(f.owner()) {
			s = withoutOutput(s)
		}
		if p.Operator {
			s.Owner = f.owner()
		}
		return s
	}
	if !f.running() {
		s := view(f)
		return s, invalid("execution %s already ended (status %s); nothing to cancel", id, s.Status)
	}
	if x := f.x; x != nil {
		x.mu.Lock()
		x.cancelled = true
		x.mu.Unlock()
		x.cancel()
	} else {
		err := m.st.Update(ctx, recordKey(id), 0, func(old []byte) ([]byte, error) {
			var r record
			if old == nil || json.Unmarshal(old, &r) != nil {
				return nil, invalid("execution %s ended and was forgotten meanwhile; nothing to cancel", id)
			}
			r.CancelRequested = true
			return json.Marshal(r)
		})
		if err != nil {
			if _, ok := errors.AsType[*engine.Error](err); ok {
				return Snapshot{}, err
			}
			return Snapshot{}, unavailable(err)
		}
	}
	wait := remoteCancelWait
	if next, err := m.waitEnd(ctx, f, wait, p.Owns); err == nil {
		f = next
	}
	return view(f), nil
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
	all := m.all(ctx)
	out := make([]Snapshot, 0, len(all))
	for _, f := range all {
		if !p.Owns(f.owner()) {
			continue
		}
		s := withoutOutput(m.snapshotOf(ctx, f, 0, 0))
		if p.Operator {
			s.Owner = f.owner()
			if f.x != nil && s.Status == StatusRunning {
				s.MemoryBytes = f.x.sandbox.memoryUsage()
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].StartedAt.After(out[j].StartedAt) })
	return out
}

// all returns every execution kept: the store's records, with this
// replica's own in their place.
func (m *Manager) all(ctx context.Context) []found {
	entries, err := m.st.List(ctx, recordPrefix)
	if err != nil {
		m.log.Warn("listing executions: the store did not answer; listing this server's own only", "err", err)
	}
	m.mu.Lock()
	local := make(map[string]*Execution, len(m.execs))
	maps.Copy(local, m.execs)
	m.mu.Unlock()
	out := make([]found, 0, len(entries)+len(local))
	for _, e := range entries {
		var r record
		if json.Unmarshal(e.Value, &r) != nil || local[r.ID] != nil {
			continue
		}
		out = append(out, found{rec: r})
	}
	for _, x := range local {
		out = append(out, found{x: x})
	}
	return out
}

// Shutdown ends every execution running here, as interrupted, and waits
// for them to end (and their end to be written).
func (m *Manager) Shutdown(ctx context.Context) {
	m.heartbeat.Stop()
	m.mu.Lock()
	for _, x := range m.execs {
		x.mu.Lock()
		if x.ended.IsZero() && !x.cancelled {
			x.interrupted = "the server shut down while it ran; the output received until then is kept"
		}
		x.mu.Unlock()
		x.cancel()
	}
	m.mu.Unlock()
	done := make(chan struct{})
	go func() { m.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.heartbeat.Leave(dctx)
}

// lookup finds an execution that allowed admits by its owner; another
// principal's execution is answered exactly like one that does not exist.
func (m *Manager) lookup(ctx context.Context, id string, allowed func(owner string) bool) (found, error) {
	notFound := invalid("unknown execution id %q: it never existed or ended more than %ds ago; list_executions shows those kept", id, m.cfg.Executions.RetentionSeconds)
	m.mu.Lock()
	x, ok := m.execs[id]
	m.mu.Unlock()
	if ok {
		if !allowed(x.owner) {
			return found{}, notFound
		}
		return found{x: x}, nil
	}
	raw, err := m.st.Get(ctx, recordKey(id))
	if errors.Is(err, store.ErrNotFound) {
		return found{}, notFound
	}
	if err != nil {
		return found{}, unavailable(err)
	}
	var r record
	if json.Unmarshal(raw, &r) != nil || r.ID != id || !allowed(r.Owner) {
		return found{}, notFound
	}
	return found{rec: r}, nil
}

// forget removes an ended execution's record and output from the store.
func (m *Manager) forget(ctx context.Context, r record) {
	_ = m.st.Delete(ctx, recordKey(r.ID))
	_ = store.DeleteBlob(ctx, m.st, outputPrefix(r.ID, "stdout"), r.StdoutBytes)
	_ = store.DeleteBlob(ctx, m.st, outputPrefix(r.ID, "stderr"), r.StderrBytes)
}

// makeRoom forgets owner's oldest ended executions while owner is at its
// quota (quotas.executions_kept) and claims the place it made, which launch
// fills or unclaim gives back; with all of them still running (or claimed),
// it answers over quota.
func (m *Manager) makeRoom(ctx context.Context, owner string) error {
	q := m.cfg.Quotas.ExecutionsKept
	if q <= 0 {
		return nil
	}
	all := m.all(ctx)
	m.mu.Lock()
	defer m.mu.Unlock()
	var own, ended []found
	for _, f := range all {
		if f.owner() != owner {
			continue
		}
		own = append(own, f)
		if !f.running() {
			ended = append(ended, f)
		}
	}
	over := len(own) + m.claimed[owner] - q + 1
	if over > len(ended) {
		return &engine.Error{Code: engine.CodeQuota, Message: fmt.Sprintf(
			"over quota: %q already has %d executions running or starting, its quota of executions kept; wait for one to end or cancel_execution one (list_executions shows them), or ask the operator to raise quotas.executions_kept", owner, len(own)-len(ended)+m.claimed[owner])}
	}
	if over > 0 {
		sort.Slice(ended, func(i, j int) bool { return ended[i].started().Before(ended[j].started()) })
		for _, f := range ended[:over] {
			if f.x != nil {
				delete(m.execs, f.x.id)
				f.x.mu.Lock()
				f.rec = f.x.recordLocked(m.replica)
				f.x.mu.Unlock()
			}
			m.forget(ctx, f.rec)
		}
	}
	m.claimed[owner]++
	return nil
}

func (f found) started() time.Time {
	if f.x != nil {
		return f.x.started
	}
	return f.rec.Started
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

// prune forgets the oldest ended executions beyond MaxKept. Those past
// their retention the store has dropped already (their TTL).
func (m *Manager) prune(ctx context.Context) {
	all := m.all(ctx)
	over := len(all) - m.cfg.Executions.MaxKept
	if over <= 0 {
		return
	}
	var ended []record
	for _, f := range all {
		if f.x == nil && !f.running() {
			ended = append(ended, f.rec)
		}
	}
	sort.Slice(ended, func(i, j int) bool { return ended[i].Started.Before(ended[j].Started) })
	for _, r := range ended[:min(over, len(ended))] {
		m.forget(ctx, r)
	}
}

// snapshotOf is f as seen now, with output from the given offsets: this
// replica's own from memory, another's from the store.
func (m *Manager) snapshotOf(ctx context.Context, f found, outOff, errOff int64) Snapshot {
	if f.x != nil {
		return m.localSnapshot(f.x, outOff, errOff)
	}
	r := f.rec
	read := func(stream string, size int) func(from, to int) []byte {
		return func(from, to int) []byte {
			data, err := store.GetBlobRange(ctx, m.st, outputPrefix(r.ID, stream), from, min(to, size))
			if err != nil {
				m.log.Warn("an execution's output could not be read from the store", "execution", r.ID, "stream", stream, "err", err)
			}
			return data
		}
	}
	return m.snapshot(r, read("stdout", r.StdoutBytes), read("stderr", r.StderrBytes), outOff, errOff)
}

func (m *Manager) localSnapshot(x *Execution, outOff, errOff int64) Snapshot {
	x.mu.Lock()
	defer x.mu.Unlock()
	out, errOut := x.stdout, x.stderr
	return m.snapshot(x.recordLocked(m.replica),
		func(from, to int) []byte { return out[from:min(to, len(out))] },
		func(from, to int) []byte { return errOut[from:min(to, len(errOut))] }, outOff, errOff)
}

// snapshot shapes a record, reading the inline windows of its output with
// readOut and readErr.
func (m *Manager) snapshot(r record, readOut, readErr func(from, to int) []byte, outOff, errOff int64) Snapshot {
	s := Snapshot{ExecutionID: r.ID, Language: r.Language, StartedAt: r.Started, Status: r.Status, Error: r.Error,
		StdoutBytes: int64(r.StdoutBytes), StderrBytes: int64(r.StderrBytes), Result: r.Result}
	if r.Status == StatusRunning && r.Stage < len(r.Stages) {
		s.Stage = r.Stages[r.Stage]
	}
	inline := m.cfg.Limits.InlineOutputBytes
	s.Stdout, s.StdoutOffset, s.StdoutTruncated = window(r.StdoutBytes, readOut, outOff, inline)
	s.Stderr, s.StderrOffset, s.StderrTruncated = window(r.StderrBytes, readErr, errOff, inline)
	end := time.Now()
	if !r.Ended.IsZero() {
		end = r.Ended
		t := r.Ended
		s.EndedAt = &t
	}
	s.ElapsedMs = end.Sub(r.Started).Milliseconds()
	return s
}

// window returns up to limit bytes of an output of size bytes from off
// (read reads a range of it), the offset used, and whether more follows.
func window(size int, read func(from, to int) []byte, off int64, limit int) (string, int64, bool) {
	from := int(min(off, int64(size)))
	to := min(size, from+limit)
	return string(read(from, to)), int64(from), size-from > limit
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "exec-" + hex.EncodeToString(b[:])
}
