package replicas

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

const (
	// heartbeatPrefix holds one key per live server, refreshed every
	// HeartbeatPeriod and expiring HeartbeatTTL after its last refresh.
	heartbeatPrefix = "replicas/"
	// HeartbeatPeriod is how often a server refreshes its key, and how
	// often it looks for the work of servers whose key expired.
	HeartbeatPeriod = 5 * time.Second
	// HeartbeatTTL is how long a server that stopped refreshing its key
	// still counts as live.
	HeartbeatTTL = 15 * time.Second
	// storeTimeout bounds one store operation of a background loop.
	storeTimeout = 30 * time.Second
)

// Heartbeat is a server's key under "replicas/": while it lives, the work
// its records name (executions, sessions) is that server's; once it
// expires, a survivor takes that work over.
type Heartbeat struct {
	st   store.Store
	name string
	log  *slog.Logger
	stop chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// NewHeartbeat is the heartbeat of the server named name on st; nothing is
// written before Beat or Run.
func NewHeartbeat(st store.Store, name string, log *slog.Logger) *Heartbeat {
	return &Heartbeat{st: st, name: name, log: log, stop: make(chan struct{})}
}

// Beat writes the key once.
func (h *Heartbeat) Beat(ctx context.Context) error {
	return h.st.Put(ctx, heartbeatPrefix+h.name, []byte(time.Now().UTC().Format(time.RFC3339)), HeartbeatTTL)
}

// Run refreshes the key every HeartbeatPeriod until Stop, calling after
// each refresh every function of each (the looks for the work of gone
// servers). The loop outlives the call that starts it, so it keeps ctx's
// values but not its end.
func (h *Heartbeat) Run(ctx context.Context, each ...func(context.Context)) {
	base := context.WithoutCancel(ctx)
	h.wg.Go(func() {
		t := time.NewTicker(HeartbeatPeriod)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(base, storeTimeout)
			if err := h.Beat(ctx); err != nil {
				h.log.Warn("this server's heartbeat was not written to the state store", "replica", h.name, "err", err)
			}
			for _, f := range each {
				f(ctx)
			}
			cancel()
		}
	})
}

// Stopped is closed once Stop begins: the server is shutting down.
func (h *Heartbeat) Stopped() <-chan struct{} { return h.stop }

// Stop ends the loop without waiting for it; the key stays until Leave,
// so that the server's work stays its own while it ends that work.
func (h *Heartbeat) Stop() { h.once.Do(func() { close(h.stop) }) }

// Leave stops the loop, waits for its last refresh (or ctx's end), and
// removes the key: the server is gone from now on.
func (h *Heartbeat) Leave(ctx context.Context) error {
	h.Stop()
	ended := make(chan struct{})
	go func() { h.wg.Wait(); close(ended) }()
	select {
	case <-ended:
	case <-ctx.Done():
		return ctx.Err()
	}
	return h.st.Delete(ctx, heartbeatPrefix+h.name)
}

// Liveness answers whether servers' heartbeats live, reading each
// server's key at most once: one pass over a list of records.
type Liveness struct {
	st    store.Store
	self  string
	alive map[string]bool
}

// NewLiveness starts a pass over st's heartbeats for the server named
// self.
func NewLiveness(st store.Store, self string) *Liveness {
	return &Liveness{st: st, self: self, alive: map[string]bool{}}
}

// Alive reports whether the server named name has a live heartbeat.
func (l *Liveness) Alive(ctx context.Context, name string) (bool, error) {
	if name == l.self {
		return true, nil
	}
	if live, known := l.alive[name]; known {
		return live, nil
	}
	_, err := l.st.Get(ctx, heartbeatPrefix+name)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	l.alive[name] = err == nil
	return err == nil, nil
}
