// Package pool keeps sandboxes started ahead of need, per language, so a
// run does not wait for a container to be created. Every pooled sandbox is
// made exactly like a cold one, serves exactly one run and is then removed;
// the pool refills in the background. When a pool is empty, a run waits a
// bounded time for the next sandbox, then gets a clear busy error. A pool
// grows while runs wait for it, up to its maximum and as far as CanGrow
// allows, and shrinks back to its size once the load is gone.
package pool

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Options configure a Pool.
type Options struct {
	// Sizes is the number of idle sandboxes kept per key when there is no
	// load; a key absent or 0 has no pool.
	Sizes map[string]int
	// MaxSizes is how far a key's pool may grow while runs wait for it
	// (idle sandboxes kept); absent or not above Sizes, the pool keeps its
	// size.
	MaxSizes map[string]int
	// ShrinkAfter is how long a pool grown above its size must go without
	// running dry (a run finding no idle sandbox) before it shrinks, one
	// sandbox per check (every two seconds), back toward its size. 0 means
	// a minute.
	ShrinkAfter time.Duration
	// CanGrow, if set, is asked before a pool grows by one sandbox of tmpl;
	// an error keeps the pool at its size, and its text is the reason that
	// Stats (doctor, metrics) report. See HostHeadroom.
	CanGrow func(tmpl sandbox.Template) error
	// Clock is the pool's time for growing and shrinking; nil is the real
	// clock. Tests inject one they advance.
	Clock Clock
	// MaxWaiters bounds the runs waiting on one empty pool; more get a busy
	// error at once.
	MaxWaiters int
	// WaitTimeout bounds how long a run waits on an empty pool.
	WaitTimeout time.Duration
	// MaxIdle is how long a sandbox may sit idle before it is replaced.
	MaxIdle time.Duration
	// CreateConcurrency bounds sandbox creations in flight across all keys.
	CreateConcurrency int
	// RefillDelay is how long the replacement of a sandbox handed out may
	// wait while others of its key are still idle: until its run ends, at
	// most this long. Creating a container costs the daemon a lot of CPU;
	// started at once, it competes with the run that just began. A run
	// that takes the last idle sandbox starts its refill at once. 0 means
	// no wait.
	RefillDelay time.Duration
	// ReleaseGrace is how long, after a run ends, its sandbox's removal
	// and, while others of its key are idle, its replacement's creation
	// wait. The run's answer is still on its way to the client then (the
	// result's encoding, the transport, the client's decoding), and a
	// container's removal and its replacement's start (for JavaScript, a
	// node starting up) take both cores for tens of milliseconds. A run
	// that leaves its pool empty is replaced at once. 0 means no wait.
	ReleaseGrace time.Duration
	// Logger receives the pool's logs.
	Logger *slog.Logger
	// Held are the keys whose pools start empty and make no sandbox until
	// Wake: their image is still being built, and a pool that tried would
	// fail, log it and back off meanwhile.
	Held map[string]bool
}

// Clock is the time a pool sizes itself by: the current time, and a ticker
// for its periodic checks.
type Clock interface {
	Now() time.Time
	// NewTicker returns a channel that receives every d, and a function
	// that stops it.
	NewTicker(d time.Duration) (<-chan time.Time, func())
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }
func (realClock) NewTicker(d time.Duration) (<-chan time.Time, func()) {
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// checkEvery is the period of a pool's checks: dead and old idle
// sandboxes, and shrinking.
const checkEvery = 2 * time.Second

// ErrBusy is returned when no sandbox became free in time.
var ErrBusy = errors.New("no sandbox free")

// Pool holds warm sandboxes per key (a language).
type Pool struct {
	backend  sandbox.Backend
	opts     Options
	log      *slog.Logger
	keys     map[string]*keyed
	create   chan struct{} // semaphore for creations
	ctx      context.Context
	cancel   context.CancelFunc
	workers  sync.WaitGroup // fill loops and creations
	removes  sync.WaitGroup // sandboxes being removed
	removing atomic.Int64   // how many, for Stats
}

type entry struct {
	sb   sandbox.Sandbox
	born time.Time
}

// keyed is the pool of one key.
type keyed struct {
	key  string
	tmpl sandbox.Template
	// base is the configured size, max how far it may grow; size is the
	// number of idle sandboxes kept now, between the two.
	base, max int
	size      int

	mu       sync.Mutex
	idle     []*entry
	creating int
	queue    []*waiter     // runs waiting, oldest first
	failed   chan struct{} // closed and replaced when a creation fails
	wake     chan struct{} // pokes the fill loop
	// deferrals holds the timers of sandboxes handed out whose replacement
	// waits for their run's end (or RefillDelay).
	deferrals map[sandbox.Sandbox]*time.Timer
	lastErr   error
	created   int
	served    int
	failures  int
	replaced  int
	// lent holds the sandboxes handed out and not yet released.
	lent map[sandbox.Sandbox]struct{}
	// lastBusy is when the pool's load last came to its size: runs holding
	// or waiting for its sandboxes as many as it keeps idle. The pool
	// shrinks only long after that.
	lastBusy time.Time
	// growErr is why the pool could not grow when runs last waited; nil
	// once it grows again or its load is gone.
	growErr error
	waited  int // runs that waited for a sandbox to be made
	// held: no sandbox is made until Wake (see Options.Held).
	held bool
	// draining: no sandbox is kept idle, only made for runs that wait
	// (see Drain).
	draining bool
}

// New starts pools for every key of templates with a size in opts.Sizes.
func New(backend sandbox.Backend, templates map[string]sandbox.Template, opts Options) *Pool {
	if opts.CreateConcurrency <= 0 {
		opts.CreateConcurrency = 2
	}
	if opts.MaxIdle <= 0 {
		opts.MaxIdle = 30 * time.Minute
	}
	if opts.ShrinkAfter <= 0 {
		opts.ShrinkAfter = time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = realClock{}
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(context.Background())
	p := &Pool{backend: backend, opts: opts, log: log, keys: map[string]*keyed{},
		create: make(chan struct{}, opts.CreateConcurrency), ctx: ctx, cancel: cancel}
	for key, tmpl := range templates {
		size := opts.Sizes[key]
		if size <= 0 {
			continue
		}
		k := &keyed{key: key, tmpl: tmpl, base: size, max: max(size, opts.MaxSizes[key]), size: size,
			failed: make(chan struct{}), wake: make(chan struct{}, 1), deferrals: map[sandbox.Sandbox]*time.Timer{},
			lent: map[sandbox.Sandbox]struct{}{}, lastBusy: opts.Clock.Now(), held: opts.Held[key]}
		p.keys[key] = k
		p.workers.Add(1)
		go p.fill(k)
	}
	return p
}

// Has reports whether key has a pool.
func (p *Pool) Has(key string) bool { _, ok := p.keys[key]; return ok }

// Held reports whether key's pool waits for Wake (see Options.Held).
func (p *Pool) Held(key string) bool {
	k, ok := p.keys[key]
	if !ok {
		return false
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.held
}

// Wake starts key's pool now: its image has just been built. A held pool
// (see Options.Held) starts filling, and one that failed to make sandboxes
// tries again at once instead of after its back-off.
func (p *Pool) Wake(key string) {
	k, ok := p.keys[key]
	if !ok {
		return
	}
	k.mu.Lock()
	k.held = false
	k.lastErr = nil
	k.mu.Unlock()
	k.poke()
}

// Get takes a sandbox of key for one run; the caller gives it back with
// Release. It waits at most the wait timeout. Waiting runs are served in
// the order they came: a new sandbox goes to the run that has waited
// longest, and a run that finds others waiting queues behind them.
func (p *Pool) Get(ctx context.Context, key string) (sandbox.Sandbox, error) {
	k, ok := p.keys[key]
	if !ok {
		return nil, fmt.Errorf("no pool for %q", key)
	}
	k.mu.Lock()
	if k.held {
		k.mu.Unlock()
		return nil, fmt.Errorf("%w: the image of %s is still being built; its warm pool starts once it is", sandbox.ErrImageMissing, key)
	}
	if len(k.queue) == 0 {
		for len(k.idle) > 0 {
			e := k.idle[0]
			k.idle = k.idle[1:]
			if p.stale(e) {
				k.replaced++
				p.discard(e.sb)
				continue
			}
			return p.lend(k, e), nil // unlocks
		}
	}
	if len(k.queue) >= p.opts.MaxWaiters {
		n := len(k.queue)
		k.mu.Unlock()
		return nil, fmt.Errorf("%w: %d runs already wait for a %s sandbox (queue limit)", ErrBusy, n, key)
	}
	// Empty, and the pool cannot make sandboxes: say why at once rather
	// than make the caller wait for a sandbox that will not come.
	if k.lastErr != nil && k.creating == 0 {
		err := k.lastErr
		k.mu.Unlock()
		return nil, err
	}
	w := &waiter{got: make(chan *entry, 1)}
	k.queue = append(k.queue, w)
	k.waited++
	k.noteLoad(p.opts.Clock)
	failed := k.failed
	grow := k.size < k.max
	k.mu.Unlock()
	if grow {
		p.grow(k)
	}
	k.poke()

	return p.await(ctx, k, key, w, failed)
}

// await waits in k's queue as w until a sandbox is handed to w, the pool
// cannot make one (failed), the wait times out, or the request or the
// pool ends; a sandbox handed over as it leaves goes to the next in line.
func (p *Pool) await(ctx context.Context, k *keyed, key string, w *waiter, failed chan struct{}) (sandbox.Sandbox, error) {
	timer := time.NewTimer(p.opts.WaitTimeout)
	defer timer.Stop()
	var why error
	for why == nil {
		select {
		case e := <-w.got:
			k.mu.Lock()
			return p.lend(k, e), nil // unlocks
		case <-failed:
			k.mu.Lock()
			if k.lastErr != nil && k.creating == 0 {
				why = k.lastErr
				break
			}
			failed = k.failed
			k.mu.Unlock()
		case <-timer.C:
			k.mu.Lock()
			why = fmt.Errorf("%w: no %s sandbox became free within %s; the server is at capacity, retry shortly", ErrBusy, key, p.opts.WaitTimeout)
		case <-ctx.Done():
			k.mu.Lock()
			why = fmt.Errorf("%w: the request ended while waiting for a sandbox: %v", ErrBusy, context.Cause(ctx))
		case <-p.ctx.Done():
			k.mu.Lock()
			why = fmt.Errorf("%w: the server is shutting down", ErrBusy)
		}
	}
	// Leaving the queue (locked): a sandbox handed over meanwhile goes to
	// the next run in line.
	k.queue = slices.DeleteFunc(k.queue, func(q *waiter) bool { return q == w })
	select {
	case e := <-w.got:
		if p.ctx.Err() != nil {
			p.discard(e.sb)
		} else {
			p.add(k, e)
		}
	default:
	}
	k.mu.Unlock()
	return nil, why
}

// grow adds one sandbox to k's size, a run having found it empty, unless
// its maximum is reached or CanGrow refuses; the refusal is kept as the
// reason the pool stays at its size.
func (p *Pool) grow(k *keyed) {
	var err error
	if p.opts.CanGrow != nil {
		err = p.opts.CanGrow(k.tmpl)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.size >= k.max {
		return
	}
	if err != nil {
		if k.growErr == nil {
			p.log.Warn("warm pool cannot grow", "language", k.key, "size", k.size, "max", k.max, "err", err)
		}
		k.growErr = fmt.Errorf("stays at %d of at most %d: %w", k.size, k.max, err)
		return
	}
	k.growErr = nil
	k.size++
}

// shrink takes k one sandbox back toward its configured size when its load
// has not come to its size for ShrinkAfter, removing a surplus idle
// sandbox (the oldest); with k locked.
func (p *Pool) shrink(k *keyed, now time.Time) {
	if len(k.queue) > 0 {
		// Runs still wait: the pool is short, whatever its size.
		k.lastBusy = now
		return
	}
	if now.Sub(k.lastBusy) < p.opts.ShrinkAfter {
		return
	}
	k.growErr = nil // no load left that it could not meet
	if k.size <= k.base {
		return
	}
	k.size--
	if len(k.idle) > k.size {
		e := k.idle[0]
		k.idle = k.idle[1:]
		p.discard(e.sb)
	}
}

// waiter is a run queued for a sandbox of an empty pool.
type waiter struct {
	got chan *entry // receives the sandbox handed to it; buffered, one
}

// noteLoad records, with k locked, when the runs holding or waiting for
// k's sandboxes come to its size.
func (k *keyed) noteLoad(clock Clock) {
	if len(k.lent)+len(k.queue) >= k.size {
		k.lastBusy = clock.Now()
	}
}

// lend hands e out for one run, with k locked; it unlocks k. The
// replacement is deferred while others are idle (see Options.RefillDelay).
func (p *Pool) lend(k *keyed, e *entry) sandbox.Sandbox {
	k.served++
	sb := e.sb
	k.lent[sb] = struct{}{}
	k.noteLoad(p.opts.Clock)
	if len(k.idle) > 0 && p.opts.RefillDelay > 0 {
		k.deferrals[sb] = time.AfterFunc(p.opts.RefillDelay, func() { p.refill(k, sb) })
		k.mu.Unlock()
		return sb
	}
	k.mu.Unlock()
	k.poke()
	return sb
}

// add makes e available, with k locked: to the run that has waited
// longest, else to the idle list.
func (p *Pool) add(k *keyed, e *entry) {
	if len(k.queue) > 0 {
		w := k.queue[0]
		k.queue = k.queue[1:]
		w.got <- e
		return
	}
	k.idle = append(k.idle, e)
}

// Release removes a sandbox that ran its job, in the background, after
// the release grace (see Options.ReleaseGrace).
func (p *Pool) Release(sb sandbox.Sandbox) {
	p.discardAfter(sb, p.opts.ReleaseGrace)
	for _, k := range p.keys {
		p.released(k, sb)
	}
}

// released forgets sb as lent by k. The deferral of its replacement, if k
// has one, ends after the release grace while others of k are idle, else
// at once.
func (p *Pool) released(k *keyed, sb sandbox.Sandbox) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.lent, sb)
	t, ok := k.deferrals[sb]
	if !ok {
		return
	}
	t.Stop()
	if grace := p.opts.ReleaseGrace; grace > 0 && len(k.idle) > 0 {
		k.deferrals[sb] = time.AfterFunc(grace, func() { p.refill(k, sb) })
		return
	}
	delete(k.deferrals, sb)
	k.poke()
}

// refill ends the deferral of sb's replacement, if k still has one, and
// wakes k's fill loop.
func (p *Pool) refill(k *keyed, sb sandbox.Sandbox) {
	k.mu.Lock()
	t, ok := k.deferrals[sb]
	if ok {
		t.Stop()
		delete(k.deferrals, sb)
	}
	k.mu.Unlock()
	if ok {
		k.poke()
	}
}

func (p *Pool) discard(sb sandbox.Sandbox) { p.discardAfter(sb, 0) }

// discardAfter removes sb in the background after grace, or at once when
// the pool closes; it counts as being removed from now.
func (p *Pool) discardAfter(sb sandbox.Sandbox, grace time.Duration) {
	p.removes.Add(1)
	p.removing.Add(1)
	go func() {
		defer p.removes.Done()
		defer p.removing.Add(-1)
		if grace > 0 {
			t := time.NewTimer(grace)
			select {
			case <-t.C:
			case <-p.ctx.Done():
				t.Stop()
			}
		}
		sb.Close()
	}()
}

func (p *Pool) stale(e *entry) bool {
	if time.Since(e.born) > p.opts.MaxIdle {
		return true
	}
	select {
	case <-e.sb.Ended():
		return true
	default:
		return false
	}
}

func (k *keyed) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// fill keeps k at its size: it starts creations while idle plus creating
// is below size, backs off after failures, and replaces idle sandboxes that
// died or grew old.
func (p *Pool) fill(k *keyed) {
	defer p.workers.Done()
	backoff := time.Second
	check, stopCheck := p.opts.Clock.NewTicker(checkEvery)
	defer stopCheck()
	var retry <-chan time.Time // the next probe after a failure
	var ticked time.Time       // the time of a check's tick not yet acted on
	for {
		k.mu.Lock()
		if !ticked.IsZero() {
			// The tick's own time: the clock may have moved on since.
			p.shrink(k, ticked)
			ticked = time.Time{}
		}
		kept := k.idle[:0]
		for _, e := range k.idle {
			if p.stale(e) {
				k.replaced++
				p.discard(e.sb)
				continue
			}
			kept = append(kept, e)
		}
		k.idle = kept
		need := k.size - len(k.idle) - k.creating
		if len(k.idle) > 0 {
			need -= len(k.deferrals) // an empty pool refills at once
		}
		if k.draining {
			need = len(k.queue) - k.creating
		}
		failing := k.lastErr != nil
		if k.held {
			need = 0
		}
		k.mu.Unlock()

		if need > 0 && !failing {
			for range need {
				k.mu.Lock()
				k.creating++
				k.mu.Unlock()
				p.workers.Add(1)
				go p.createOne(k)
			}
		}
		// The probe's timer is armed once per failure and kept across
		// wake-ups: re-armed on every check, it would never fire.
		if !failing {
			retry, backoff = nil, time.Second
		} else if retry == nil {
			retry = time.After(backoff)
			backoff = min(backoff*2, 30*time.Second)
		}
		select {
		case <-p.ctx.Done():
			return
		case <-k.wake:
		case ticked = <-check:
		case <-retry:
			retry = nil
			k.mu.Lock()
			if k.creating == 0 {
				k.creating++
				p.workers.Add(1)
				go p.createOne(k) // one probe; success clears the error
			}
			k.mu.Unlock()
		}
	}
}

// readyTimeout bounds the wait for a new sandbox's agent to say it is
// ready; the agent itself says so within seconds of its start even when
// its warm interpreter does not load.
const readyTimeout = 2 * time.Minute

func (p *Pool) createOne(k *keyed) {
	defer p.workers.Done()
	select {
	case p.create <- struct{}{}:
	case <-p.ctx.Done():
		k.mu.Lock()
		k.creating--
		k.mu.Unlock()
		return
	}
	sb, err := p.backend.Create(p.ctx, k.tmpl)
	<-p.create
	if err == nil {
		// Idle only once ready: a run that took a sandbox whose warm
		// interpreter is still loading would wait for it (hundreds of ms
		// on a busy machine), and the pool would count as full before it
		// is. The wait is outside the creation slot: it costs the sandbox's
		// own CPU, not the backend's.
		rctx, cancel := context.WithTimeout(p.ctx, readyTimeout)
		if rerr := sb.Ready(rctx); rerr != nil {
			p.discard(sb)
			sb, err = nil, rerr
		}
		cancel()
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.creating--
	if err != nil {
		if p.ctx.Err() == nil {
			// Said once per outage: the probes that follow back off
			// (see fill) and count in Stat.Failures instead.
			if k.lastErr == nil && errors.Is(err, sandbox.ErrImageMissing) {
				p.log.Error("warm pool cannot start sandboxes", "language", k.key, "err", err, "fix", "mcp-code-runner images build "+k.key)
			} else if k.lastErr == nil {
				p.log.Error("warm pool cannot start sandboxes", "language", k.key, "err", err)
			}
			k.lastErr = err
			k.failures++
			close(k.failed) // wake waiters so they see the error
			k.failed = make(chan struct{})
		}
		return
	}
	if p.ctx.Err() != nil {
		p.discard(sb)
		return
	}
	if k.lastErr != nil {
		p.log.Info("warm pool recovered", "language", k.key)
	}
	k.lastErr = nil
	k.created++
	p.add(k, &entry{sb: sb, born: time.Now()})
	k.poke()
}

// Stat describes one key's pool.
type Stat struct {
	Language string `json:"language"`
	// Size is the number of idle sandboxes kept now: the configured size
	// (Base), or more, up to MaxSize, while runs wait.
	Size     int `json:"size"`
	Base     int `json:"base"`
	MaxSize  int `json:"max_size"`
	Idle     int `json:"idle"`
	Creating int `json:"creating"`
	Waiting  int `json:"waiting"`
	Created  int `json:"created"`
	Served   int `json:"served"`
	Failures int `json:"failures"`
	Replaced int `json:"replaced"`
	// Deferred counts sandboxes whose replacement waits: for their run to
	// end (see Options.RefillDelay), then for the release grace (see
	// Options.ReleaseGrace).
	Deferred int `json:"deferred"`
	// Removing counts used sandboxes being removed, across all languages.
	Removing int `json:"removing"`
	// Waited counts runs that found the pool empty and waited for a
	// sandbox to be made (the others got one ready).
	Waited int    `json:"waited"`
	Error  string `json:"error,omitempty"`
	// GrowBlocked is why the pool stays at its size while runs wait for
	// it (memory, pids); empty when it can grow or need not.
	GrowBlocked string `json:"grow_blocked,omitempty"`
}

// Stats returns every pool's state, sorted by key.
func (p *Pool) Stats() []Stat {
	var out []Stat
	for _, k := range p.keys {
		k.mu.Lock()
		s := Stat{Language: k.key, Size: k.size, Base: k.base, MaxSize: k.max, Idle: len(k.idle), Creating: k.creating,
			Waiting: len(k.queue), Created: k.created, Served: k.served, Failures: k.failures, Replaced: k.replaced,
			Deferred: len(k.deferrals), Removing: int(p.removing.Load()), Waited: k.waited}
		if k.lastErr != nil {
			s.Error = k.lastErr.Error()
		}
		if k.growErr != nil {
			s.GrowBlocked = k.growErr.Error()
		}
		k.mu.Unlock()
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Language < out[j].Language })
	return out
}

// Drain makes the pool keep no sandbox idle from now on: it removes those
// idle and makes sandboxes only for the runs that wait. A stopping server
// drains its pool as its shutdown begins, so that what its warm sandboxes
// hold (a cluster's CPU requests, a host's memory) goes to the servers
// that stay, and to its own last runs, rather than wait for its end.
func (p *Pool) Drain() {
	for _, k := range p.keys {
		k.mu.Lock()
		k.draining = true
		p.dropIdle(k)
		k.mu.Unlock()
		k.poke()
	}
}

// dropIdle removes k's idle sandboxes and forgets the deferred
// replacements of those handed out, with k locked.
func (p *Pool) dropIdle(k *keyed) {
	for _, e := range k.idle {
		p.discard(e.sb)
	}
	k.idle = nil
	for sb, t := range k.deferrals {
		t.Stop()
		delete(k.deferrals, sb)
	}
}

// Close stops refilling, removes every idle sandbox and waits until all
// removals (of idle and released sandboxes) are done or ctx ends.
func (p *Pool) Close(ctx context.Context) error {
	p.cancel()
	for _, k := range p.keys {
		k.mu.Lock()
		p.dropIdle(k)
		k.mu.Unlock()
	}
	done := make(chan struct{})
	go func() { p.workers.Wait(); p.removes.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("pool shutdown: %w", ctx.Err())
	}
}
