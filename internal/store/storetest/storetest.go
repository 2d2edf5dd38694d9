// Package storetest is the specification of [store.Store] as one table of
// tests, run against every implementation (the in-memory store, the
// embedded store and a real etcd): what one implementation does, all do.
package storetest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Open returns a new, empty store for one test; the test closes it (and
// may close it before its end).
type Open func(t *testing.T) store.Store

// shortTTL is the TTL of the expiry specifications: etcd's leases have a
// granularity of seconds.
const shortTTL = time.Second

// expiryLimit bounds the wait for an entry of shortTTL to disappear (etcd
// rounds a lease up to its minimum TTL, 2 s by default, and revokes it on
// a 500 ms tick).
const expiryLimit = 15 * time.Second

// Run runs the specification against the stores open makes.
func Run(t *testing.T, open Open) {
	for _, spec := range specs {
		t.Run(spec.name, func(t *testing.T) {
			t.Parallel()
			s := open(t)
			t.Cleanup(func() { _ = s.Close() })
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			spec.run(ctx, t, s)
		})
	}
}

var specs = []struct {
	name string
	run  func(ctx context.Context, t *testing.T, s store.Store)
}{
	{"a value put is read back as it was written", func(ctx context.Context, t *testing.T, s store.Store) {
		value := []byte("{\"status\":\"done\"}\x00\xff binary too")
		must(t, s.Put(ctx, "executions/a", value, 0))
		expect(ctx, t, s, "executions/a", value)
	}},
	{"an empty value is a value, not an absence", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte{}, 0))
		got, err := s.Get(ctx, "k")
		if err != nil || len(got) != 0 {
			t.Fatalf("Get = %q, %v; want an empty value", got, err)
		}
	}},
	{"a missing key is ErrNotFound", func(ctx context.Context, t *testing.T, s store.Store) {
		if _, err := s.Get(ctx, "executions/none"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
	}},
	{"put replaces the value", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("one"), 0))
		must(t, s.Put(ctx, "k", []byte("two"), 0))
		expect(ctx, t, s, "k", []byte("two"))
	}},
	{"the caller's and the store's bytes are not shared", func(ctx context.Context, t *testing.T, s store.Store) {
		value := []byte("original")
		must(t, s.Put(ctx, "k", value, 0))
		copy(value, "changed!")
		got, err := s.Get(ctx, "k")
		must(t, err)
		copy(got, "CHANGED!")
		expect(ctx, t, s, "k", []byte("original"))
	}},
	{"a value of 1 MiB is kept whole", func(ctx context.Context, t *testing.T, s store.Store) {
		value := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
		must(t, s.Put(ctx, "outputs/big", value, 0))
		expect(ctx, t, s, "outputs/big", value)
	}},
	{"delete removes the key, and deleting a missing key is no error", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("v"), 0))
		must(t, s.Delete(ctx, "k"))
		absent(ctx, t, s, "k")
		must(t, s.Delete(ctx, "k"))
		must(t, s.Delete(ctx, "never/was"))
	}},
	{"create stores a new key and refuses an existing one with ErrExists", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Create(ctx, "claims/x", []byte("first"), 0))
		if err := s.Create(ctx, "claims/x", []byte("second"), 0); !errors.Is(err, store.ErrExists) {
			t.Fatalf("second Create = %v, want ErrExists", err)
		}
		expect(ctx, t, s, "claims/x", []byte("first"))
		must(t, s.Delete(ctx, "claims/x"))
		must(t, s.Create(ctx, "claims/x", []byte("third"), 0))
		expect(ctx, t, s, "claims/x", []byte("third"))
	}},
	{"of many concurrent creates of one key exactly one wins", func(ctx context.Context, t *testing.T, s store.Store) {
		const n = 16
		var wg sync.WaitGroup
		results := make([]error, n)
		for i := range n {
			wg.Go(func() { results[i] = s.Create(ctx, "claims/one", []byte(strconv.Itoa(i)), 0) })
		}
		wg.Wait()
		won := -1
		for i, err := range results {
			switch {
			case err == nil && won >= 0:
				t.Fatalf("creates %d and %d both won", won, i)
			case err == nil:
				won = i
			case !errors.Is(err, store.ErrExists):
				t.Fatalf("create %d: %v, want nil or ErrExists", i, err)
			}
		}
		if won < 0 {
			t.Fatal("no create won")
		}
		expect(ctx, t, s, "claims/one", []byte(strconv.Itoa(won)))
	}},
	{"update sees nil for a missing key and stores what fn returns", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Update(ctx, "k", 0, func(old []byte) ([]byte, error) {
			if old != nil {
				t.Errorf("old = %q, want nil", old)
			}
			return []byte("made"), nil
		}))
		expect(ctx, t, s, "k", []byte("made"))
		must(t, s.Update(ctx, "k", 0, func(old []byte) ([]byte, error) { return append(old, " and changed"...), nil }))
		expect(ctx, t, s, "k", []byte("made and changed"))
	}},
	{"update returning nil deletes the key", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("v"), 0))
		must(t, s.Update(ctx, "k", 0, func([]byte) ([]byte, error) { return nil, nil }))
		absent(ctx, t, s, "k")
		must(t, s.Update(ctx, "missing", 0, func([]byte) ([]byte, error) { return nil, nil }))
		absent(ctx, t, s, "missing")
	}},
	{"update whose fn fails changes nothing and returns the error", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("kept"), 0))
		refused := errors.New("quota reached")
		if err := s.Update(ctx, "k", 0, func([]byte) ([]byte, error) { return []byte("lost"), refused }); !errors.Is(err, refused) {
			t.Fatalf("Update = %v, want fn's error", err)
		}
		expect(ctx, t, s, "k", []byte("kept"))
	}},
	{"concurrent updates of one key lose none", func(ctx context.Context, t *testing.T, s store.Store) {
		const n = 20
		var wg sync.WaitGroup
		for range n {
			wg.Go(func() {
				err := s.Update(ctx, "counters/c", 0, func(old []byte) ([]byte, error) {
					v, _ := strconv.Atoi(string(old))
					return []byte(strconv.Itoa(v + 1)), nil
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
		expect(ctx, t, s, "counters/c", []byte(strconv.Itoa(n)))
	}},
	{"list returns the live entries under a prefix in key order", func(ctx context.Context, t *testing.T, s store.Store) {
		for _, k := range []string{"tasks/b", "tasks/a", "tasks/c/1", "tasksx", "task", "executions/a"} {
			must(t, s.Put(ctx, k, []byte("v:"+k), 0))
		}
		must(t, s.Put(ctx, "tasks/gone", []byte("v"), 0))
		must(t, s.Delete(ctx, "tasks/gone"))
		got, err := s.List(ctx, "tasks/")
		must(t, err)
		want := []string{"tasks/a", "tasks/b", "tasks/c/1"}
		if len(got) != len(want) {
			t.Fatalf("List = %v, want keys %v", got, want)
		}
		for i, e := range got {
			if e.Key != want[i] || string(e.Value) != "v:"+want[i] {
				t.Errorf("entry %d = %s=%q, want %s=%q", i, e.Key, e.Value, want[i], "v:"+want[i])
			}
		}
		none, err := s.List(ctx, "sessions/")
		if err != nil || len(none) != 0 {
			t.Fatalf("List of an empty prefix = %v, %v; want nothing", none, err)
		}
	}},
	{"list with an empty prefix returns every entry", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "a", []byte("1"), 0))
		must(t, s.Put(ctx, "b/c", []byte("2"), 0))
		got, err := s.List(ctx, "")
		must(t, err)
		if len(got) != 2 || got[0].Key != "a" || got[1].Key != "b/c" {
			t.Fatalf("List(\"\") = %v", got)
		}
	}},
	{"an entry with a TTL is readable until it expires, then gone from get and list", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "heartbeats/r1", []byte("alive"), shortTTL))
		must(t, s.Put(ctx, "heartbeats/r2", []byte("kept"), time.Hour))
		must(t, s.Put(ctx, "heartbeats/r3", []byte("forever"), 0))
		expect(ctx, t, s, "heartbeats/r1", []byte("alive"))
		eventuallyAbsent(ctx, t, s, "heartbeats/r1")
		got, err := s.List(ctx, "heartbeats/")
		must(t, err)
		if len(got) != 2 || got[0].Key != "heartbeats/r2" || got[1].Key != "heartbeats/r3" {
			t.Fatalf("List after expiry = %v, want r2 and r3", got)
		}
	}},
	{"create succeeds over an expired entry", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Create(ctx, "claims/lease", []byte("old owner"), shortTTL))
		eventuallyAbsent(ctx, t, s, "claims/lease")
		must(t, s.Create(ctx, "claims/lease", []byte("new owner"), 0))
		expect(ctx, t, s, "claims/lease", []byte("new owner"))
	}},
	{"put without a TTL makes an expiring key permanent", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("expiring"), shortTTL))
		must(t, s.Put(ctx, "k", []byte("permanent"), 0))
		must(t, s.Put(ctx, "witness", []byte("w"), shortTTL))
		eventuallyAbsent(ctx, t, s, "witness")
		expect(ctx, t, s, "k", []byte("permanent"))
	}},
	{"update keeps the key's TTL unless it gives one", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "kept-ttl", []byte("1"), shortTTL))
		must(t, s.Update(ctx, "kept-ttl", 0, func([]byte) ([]byte, error) { return []byte("2"), nil }))
		must(t, s.Put(ctx, "new-ttl", []byte("1"), shortTTL))
		must(t, s.Update(ctx, "new-ttl", time.Hour, func([]byte) ([]byte, error) { return []byte("2"), nil }))
		must(t, s.Update(ctx, "permanent", 0, func([]byte) ([]byte, error) { return []byte("p"), nil }))
		eventuallyAbsent(ctx, t, s, "kept-ttl")
		expect(ctx, t, s, "new-ttl", []byte("2"))
		expect(ctx, t, s, "permanent", []byte("p"))
	}},
	{"a cancelled context fails the call", func(ctx context.Context, t *testing.T, s store.Store) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		if err := s.Put(cctx, "k", []byte("v"), 0); err == nil {
			t.Error("Put with a cancelled context succeeded")
		}
		if _, err := s.Get(cctx, "k"); err == nil || errors.Is(err, store.ErrNotFound) {
			t.Errorf("Get with a cancelled context = %v, want the context's error", err)
		}
	}},
	{"a closed store fails with ErrUnavailable", func(ctx context.Context, t *testing.T, s store.Store) {
		must(t, s.Put(ctx, "k", []byte("v"), 0))
		must(t, s.Close())
		if _, err := s.Get(ctx, "k"); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Get after Close = %v, want ErrUnavailable", err)
		}
		if err := s.Put(ctx, "k", []byte("v"), 0); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("Put after Close = %v, want ErrUnavailable", err)
		}
		if _, err := s.List(ctx, ""); !errors.Is(err, store.ErrUnavailable) {
			t.Errorf("List after Close = %v, want ErrUnavailable", err)
		}
	}},
	{"describe names the store", func(_ context.Context, t *testing.T, s store.Store) {
		if s.Describe() == "" {
			t.Error("Describe is empty")
		}
	}},
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func expect(ctx context.Context, t *testing.T, s store.Store, key string, want []byte) {
	t.Helper()
	got, err := s.Get(ctx, key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("Get(%q) = %s, want %s", key, short(got), short(want))
	}
}

func absent(ctx context.Context, t *testing.T, s store.Store, key string) {
	t.Helper()
	if got, err := s.Get(ctx, key); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("Get(%q) = %s, %v; want ErrNotFound", key, short(got), err)
	}
}

// eventuallyAbsent waits for key's TTL to pass.
func eventuallyAbsent(ctx context.Context, t *testing.T, s store.Store, key string) {
	t.Helper()
	deadline := time.Now().Add(expiryLimit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		_, err := s.Get(ctx, key)
		if errors.Is(err, store.ErrNotFound) {
			return
		}
		if err != nil {
			t.Fatalf("Get(%q): %v", key, err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("%q still readable %s after its TTL of %s", key, expiryLimit, shortTTL)
		}
		<-tick.C
	}
}

func short(b []byte) string {
	if len(b) > 64 {
		return fmt.Sprintf("%q... (%d bytes)", b[:64], len(b))
	}
	return fmt.Sprintf("%q", b)
}
