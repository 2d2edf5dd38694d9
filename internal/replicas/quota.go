package replicas

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// A principal's runs in flight, counted across replicas: on a shared store
// each run holds one of the principal's quotas.concurrent_runs places, a
// key "quota/runs/<principal>/<n>" claimed with the store's Create, which
// two replicas cannot both win. A place's key expires quotaPlaceTTL after
// its holder last renewed it, so a replica that dies gives its places back.
const (
	quotaPrefix     = "quota/runs/"
	quotaPlaceTTL   = 30 * time.Second
	quotaPlaceRenew = 10 * time.Second
	quotaStoreWait  = 5 * time.Second
)

// SharedQuota is the engine option that counts principals' runs in flight
// across every server sharing st. On a store one server holds, the engine
// counts them in its memory, and the option changes nothing.
func SharedQuota(st store.Store, log *slog.Logger) engine.Option {
	if !store.IsShared(st) {
		return func(*engine.Engine) {}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return engine.WithRunPlaces(&runPlaces{st: st, log: log})
}

// runPlaces are the principals' quota places in the shared store.
type runPlaces struct {
	st  store.Store
	log *slog.Logger
}

// Take claims one of owner's quota places, or answers that owner is at its
// quota.
func (p *runPlaces) Take(owner string, quota int) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), quotaStoreWait)
	defer cancel()
	prefix := quotaPrefix + url.PathEscape(owner) + "/"
	for n := range quota {
		key := fmt.Sprintf("%s%d", prefix, n)
		err := p.st.Create(ctx, key, []byte(time.Now().UTC().Format(time.RFC3339)), quotaPlaceTTL)
		if errors.Is(err, store.ErrExists) {
			continue
		}
		if err != nil {
			return nil, &engine.Error{Code: engine.CodeUnavailable, Err: err, Message: fmt.Sprintf(
				"the server's state store did not answer while counting %q's runs in flight (%v); try again shortly", owner, err)}
		}
		return p.hold(key), nil
	}
	return nil, &engine.Error{Code: engine.CodeQuota, Message: fmt.Sprintf(
		"over quota: %q already has %d runs in flight on this service's servers, its quota of concurrent runs; wait for one to end (or cancel_execution one) and retry, or ask the operator to raise quotas.concurrent_runs", owner, quota)}
}

// hold renews the place under key until the returned function gives it
// back.
func (p *runPlaces) hold(key string) func() {
	stop := make(chan struct{})
	renewed := make(chan struct{})
	go func() {
		defer close(renewed)
		t := time.NewTicker(quotaPlaceRenew)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			ctx, cancel := context.WithTimeout(context.Background(), quotaStoreWait)
			if err := p.st.Put(ctx, key, []byte(time.Now().UTC().Format(time.RFC3339)), quotaPlaceTTL); err != nil {
				p.log.Warn("a run's place in its principal's quota was not renewed in the state store", "key", key, "err", err)
			}
			cancel()
		}
	}()
	return sync.OnceFunc(func() {
		close(stop)
		<-renewed
		ctx, cancel := context.WithTimeout(context.Background(), quotaStoreWait)
		defer cancel()
		if err := p.st.Delete(ctx, key); err != nil {
			p.log.Warn("a run's place in its principal's quota was not given back; it expires by itself", "key", key, "ttl", quotaPlaceTTL, "err", err)
		}
	})
}
