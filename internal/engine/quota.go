package engine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// Reserve takes a run slot, waiting at most the queue timeout, for a run
// that starts later (RunOptions.Release). The slot counts against the
// quota of ctx's principal.
func (e *Engine) Reserve(ctx context.Context) (*Slot, error) { return e.acquire(ctx) }

// Slot is a run slot held for a principal: a place among the server's
// max_concurrent_runs and one among the principal's quotas.concurrent_runs.
type Slot struct {
	slot  func()
	quota func()
}

// Release gives the slot back unused.
func (s *Slot) Release() { s.quota(); s.slot() }

// acquire takes a run slot for ctx's principal, waiting at most the queue
// timeout. A principal at its quota of concurrent runs is answered at once:
// its runs do not queue in front of everyone else's.
func (e *Engine) acquire(ctx context.Context) (*Slot, error) {
	owner := principal.FromContext(ctx).Name
	unquota, err := e.takeQuota(owner)
	if err != nil {
		return nil, err
	}
	release := &Slot{slot: sync.OnceFunc(func() { <-e.slots }), quota: unquota}
	select {
	case e.slots <- struct{}{}:
		return release, nil
	default:
	}
	t := time.NewTimer(e.cfg.QueueTimeout())
	defer t.Stop()
	select {
	case e.slots <- struct{}{}:
		return release, nil
	case <-t.C:
		unquota()
		return nil, &Error{Code: CodeBusy, Message: fmt.Sprintf("the server is busy: all %d run slots stayed taken for %s; retry shortly", cap(e.slots), e.cfg.QueueTimeout())}
	case <-ctx.Done():
		unquota()
		return nil, &Error{Code: CodeBusy, Message: "the request ended while waiting for a free run slot: " + context.Cause(ctx).Error(), Err: ctx.Err()}
	}
}

// takeQuota counts one more run in flight for owner, or answers that owner
// is at its quota (quotas.concurrent_runs): in this process, or across
// every server sharing the state store (RunPlaces).
func (e *Engine) takeQuota(owner string) (func(), error) {
	q := e.cfg.Quotas.ConcurrentRuns
	if q <= 0 {
		return func() {}, nil
	}
	if e.places != nil {
		return e.places.Take(owner, q)
	}
	e.quotaMu.Lock()
	defer e.quotaMu.Unlock()
	if n := e.running[owner]; n >= q {
		return nil, &Error{Code: CodeQuota, Message: fmt.Sprintf(
			"over quota: %q already has %d runs in flight, its quota of concurrent runs; wait for one to end (or cancel_execution one) and retry, or ask the operator to raise quotas.concurrent_runs", owner, n)}
	}
	e.running[owner]++
	return sync.OnceFunc(func() {
		e.quotaMu.Lock()
		defer e.quotaMu.Unlock()
		if e.running[owner]--; e.running[owner] <= 0 {
			delete(e.running, owner)
		}
	}), nil
}

// RunPlaces count principals' runs in flight across every server sharing
// the state store (replicas.SharedQuota).
type RunPlaces interface {
	// Take claims one of owner's quota places, or answers that owner is at
	// its quota (an *Error of CodeQuota, or CodeUnavailable when the store
	// does not answer); release gives the place back.
	Take(owner string, quota int) (release func(), err error)
}

// WithRunPlaces counts principals' runs in flight in p instead of this
// process's memory.
func WithRunPlaces(p RunPlaces) Option {
	return func(e *Engine) { e.places = p }
}
