package engine

import (
	"context"
	"time"
)

// Observer sees every run the engine finishes or refuses, for metrics. It
// is called on the run's goroutine after the answer is shaped, so it must
// be quick; ctx is the run's (it carries the principal).
type Observer interface {
	RunDone(ctx context.Context, r RunStats)
}

// RunStats describe one run for an Observer.
type RunStats struct {
	Language string
	// Status is the result's status (ok, error, timeout, ...) or, for a run
	// that returned an error, the error's code (busy, invalid_argument, ...).
	Status string
	// Session says the run went to a session's sandbox.
	Session bool
	// Warm says the sandbox came from the warm pool.
	Warm bool
	// QueueWait is the wait for a run slot; Acquire the wait for a
	// sandbox (a pool's, or a cold one created); Exec the job's time in the
	// sandbox; Total the whole call. A stage not reached is zero.
	QueueWait, Acquire, Exec, Total time.Duration
	// StdoutBytes and StderrBytes are what the program wrote.
	StdoutBytes, StderrBytes int64
	// Reached tells which stages were reached, so that zero durations of
	// stages never reached are not observed.
	Reached Stages
}

// Stages is a set of run stages reached.
type Stages uint8

// The stages of a run.
const (
	StageQueued Stages = 1 << iota
	StageAcquired
	StageExecuted
)

type nopObserver struct{}

func (nopObserver) RunDone(context.Context, RunStats) {}

// WithObserver makes o hear of every run, refusal and pool event (the
// metrics); without it nothing does.
func WithObserver(o Observer) Option {
	return func(e *Engine) {
		if o != nil {
			e.obs = o
		}
	}
}
