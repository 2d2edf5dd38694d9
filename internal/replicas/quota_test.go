//go:build !fast

package replicas_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// TestAPrincipalsConcurrentRunsAreCountedAcrossReplicas: two servers on
// one real etcd; a principal allowed 2 runs in flight gets 2 in total, not
// 2 on each, and a place given back on one server is free on the other.
func TestAPrincipalsConcurrentRunsAreCountedAcrossReplicas(t *testing.T) {
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	st, err := store.OpenEtcd(config.Etcd{Endpoints: []string{etcd.Endpoint}, Prefix: "quota-test/"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	cfg := config.Default()
	cfg.Quotas.ConcurrentRuns = 2
	testutil.Unhurried(&cfg)
	replica := func() *engine.Engine {
		e := engine.New(cfg, languages.Builtin(), testutil.FakeBackend(t), nil, engine.WithStore(st), replicas.SharedQuota(st, nil))
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			_ = e.Close(ctx)
		})
		return e
	}
	a, b := replica(), replica()
	alice := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	bob := principal.WithContext(context.Background(), principal.Principal{Name: "bob"})

	first, err := a.Reserve(alice)
	if err != nil {
		t.Fatalf("alice's first run on one server: %v", err)
	}
	second, err := b.Reserve(alice)
	if err != nil {
		t.Fatalf("alice's second run on the other server: %v", err)
	}
	defer second.Release()
	for name, e := range map[string]*engine.Engine{"one server": a, "the other": b} {
		_, err := e.Reserve(alice)
		var eerr *engine.Error
		if !errors.As(err, &eerr) || eerr.Code != engine.CodeQuota || !strings.Contains(eerr.Message, "2 runs in flight") {
			t.Errorf("alice's third run on %s: %v, want the quota's refusal", name, err)
		}
	}
	other, err := b.Reserve(bob)
	if err != nil {
		t.Fatalf("bob's run while alice is at her quota: %v", err)
	}
	other.Release()
	first.Release()
	third, err := b.Reserve(alice)
	if err != nil {
		t.Fatalf("alice's run after one ended on the other server: %v", err)
	}
	third.Release()
}
