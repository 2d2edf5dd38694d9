package engine

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// A principal's runs in flight, counted across replicas: on a shared store
// each run holds one of the principal's quotas.concurrent_runs places, a
// key "quota/runs/<principal>/<n>" claimed with the store's Create, which
// two replicas cannot both win. A place's key expires quotaPlaceTTL after
// its holder last renewed it, so a replica that dies gives its places back.
const (
	quotaPlaceTTL   = 30 * time.Second
	quotaPlaceRenew = 10 * time.Second
	quotaStoreWait  = 5 * time.Second
)

// takeSharedQuota claims one of owner's q places in the shared store, or
// answers that owner is at its quota.
func (e *Engine) takeSharedQuota(owner string, q int) (func(), error) {
	ctx, cancel := context.WithTimeout(context.Background(), quotaStoreWait)
	defer cancel()
	prefix := "quota/runs/" + url.PathEscape(owner) + "/"
	for n := range q {
		key := fmt.Sprintf("%s%d", prefix, n)
		err := e.state.Create(ctx, key, []byte(time.Now().UTC().Format(time.RFC3339)), quotaPlaceTTL)
		if errors.Is(err, store.ErrExists) {
			continue
		}
		if err != nil {
			return nil, &Error{Code: CodeUnavailable, Err: err, Message: fmt.Sprintf(
				"the server's state store did not answer while counting %q's runs in flight (%v); try again shortly", owner, err)}
		}
		return e.holdPlace(key), nil
	}
	return nil, &Error{Code: CodeQuota, Message: fmt.Sprintf(
		"over quota: %q already has %d runs in flight on this service's servers, its quota of concurrent runs; wait for one to end (or cancel_execution one) and retry, or ask the operator to raise quotas.concurrent_runs", owner, q)}
}

// holdPlace renews the place under key until the returned function gives
// it back.
func (e *Engine) holdPlace(key string) func() {
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
			if err := e.state.Put(ctx, key, []byte(time.Now().UTC().Format(time.RFC3339)), quotaPlaceTTL); err != nil {
				e.log.Warn("a run's place in its principal's quota was not renewed in the state store", "key", key, "err", err)
			}
			cancel()
		}
	}()
	return sync.OnceFunc(func() {
		close(stop)
		<-renewed
		ctx, cancel := context.WithTimeout(context.Background(), quotaStoreWait)
		defer cancel()
		if err := e.state.Delete(ctx, key); err != nil {
			e.log.Warn("a run's place in its principal's quota was not given back; it expires by itself", "key", key, "ttl", quotaPlaceTTL, "err", err)
		}
	})
}
