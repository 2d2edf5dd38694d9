//go:build !fast

package store_test

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store/storetest"
)

// The specification runs against a real etcd of the test's own, each case
// under a prefix of its own.
func TestEtcdMeetsTheSpecification(t *testing.T) {
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) store.Store {
		s, err := store.OpenEtcd(config.Etcd{Endpoints: []string{etcd.Endpoint}, Prefix: fmt.Sprintf("/spec-%d/", n.Add(1)), DialTimeoutSeconds: 5})
		if err != nil {
			t.Fatalf("%v\netcd's log:\n%s", err, etcd.Log())
		}
		return s
	})
}

func TestEtcdStoresOfOnePrefixShareTheirStateAndOthersDoNot(t *testing.T) {
	etcd := storetest.StartEtcd(t, storetest.EtcdOptions{})
	open := func(prefix string) store.Store {
		s, err := store.OpenEtcd(config.Etcd{Endpoints: []string{etcd.Endpoint}, Prefix: prefix, DialTimeoutSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	}
	a, b, other := open("/mcr/"), open("/mcr/"), open("/other/")
	ctx := t.Context()
	if err := a.Create(ctx, "tasks/t1", []byte("from a"), 0); err != nil {
		t.Fatal(err)
	}
	if got, err := b.Get(ctx, "tasks/t1"); err != nil || string(got) != "from a" {
		t.Fatalf("the other replica reads %q, %v; want what a wrote", got, err)
	}
	if err := b.Create(ctx, "tasks/t1", []byte("from b"), 0); !errors.Is(err, store.ErrExists) {
		t.Fatalf("b's Create of a's key = %v, want ErrExists", err)
	}
	if got, err := other.List(ctx, ""); err != nil || len(got) != 0 {
		t.Fatalf("another prefix lists %v, %v; want nothing", got, err)
	}
}

func TestEtcdUnreachableAtOpenIsUnavailableAndNamed(t *testing.T) {
	endpoint := "http://" + storetest.ClosedPort(t)
	start := time.Now()
	_, err := store.OpenEtcd(config.Etcd{Endpoints: []string{endpoint}, Prefix: "/mcr/", DialTimeoutSeconds: 1})
	if !errors.Is(err, store.ErrUnavailable) || !strings.Contains(err.Error(), endpoint) || !strings.Contains(err.Error(), "start etcd") {
		t.Fatalf("OpenEtcd of a closed port = %v; want ErrUnavailable naming %s and the fix", err, endpoint)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("refusing took %s, want about the dial timeout (1 s)", took)
	}
}
