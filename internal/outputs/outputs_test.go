package outputs

import (
	"bytes"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"testing"
	"time"
)

func TestStoreEvictsOldestAndExpired(t *testing.T) {
	now := time.Unix(1000, 0)
	s := New(store.NewMemory(), "outputs", 10, 0, time.Minute)
	s.now = func() time.Time { return now }
	mustPut(t, s, "a", "alice", []byte("aaaa"))
	mustPut(t, s, "b", "alice", []byte("bbbb"))
	mustPut(t, s, "c", "alice", []byte("cccc")) // 12 bytes > 10: a goes
	if _, ok := s.Get("a", "alice"); ok {
		t.Error("oldest output kept past the size cap")
	}
	if got, ok := s.Get("c", "alice"); !ok || string(got) != "cccc" {
		t.Errorf("c = %q, %v", got, ok)
	}
	now = now.Add(2 * time.Minute)
	if _, ok := s.Get("b", "alice"); ok {
		t.Error("output kept past its retention")
	}
	if n := len(s.List("alice")); n != 0 {
		t.Errorf("%d outputs left after expiry", n)
	}
	mustPut(t, s, "big", "alice", make([]byte, 50)) // bigger than the store: kept cut to size
	if got, _ := s.Get("big", "alice"); len(got) != 10 {
		t.Errorf("big output kept at %d bytes", len(got))
	}
}

func TestStoreAnswersOnlyTheOwner(t *testing.T) {
	s := New(store.NewMemory(), "outputs", 100, 0, time.Minute)
	mustPut(t, s, "mcr://runs/1/stdout", "alice", []byte("alice's output"))
	if _, ok := s.Get("mcr://runs/1/stdout", "bob"); ok {
		t.Error("bob reads alice's output")
	}
	if got := s.List("bob"); len(got) != 0 {
		t.Errorf("bob lists %v", got)
	}
	if got, ok := s.Get("mcr://runs/1/stdout", "alice"); !ok || string(got) != "alice's output" {
		t.Errorf("alice reads %q, %v", got, ok)
	}
}

func TestStoreOwnerQuotaPushesOutOnlyTheOwnersOldest(t *testing.T) {
	s := New(store.NewMemory(), "outputs", 100, 10, time.Minute)
	mustPut(t, s, "bob-1", "bob", []byte("bbbb"))
	mustPut(t, s, "alice-1", "alice", []byte("aaaa"))
	mustPut(t, s, "alice-2", "alice", []byte("aaaa"))
	mustPut(t, s, "alice-3", "alice", []byte("aaaa")) // 12 > 10: alice-1 goes
	if _, ok := s.Get("alice-1", "alice"); ok {
		t.Error("alice's oldest output kept past her quota")
	}
	if _, ok := s.Get("bob-1", "bob"); !ok {
		t.Error("alice's quota pushed out bob's output")
	}
	if got := s.Bytes("alice"); got != 8 {
		t.Errorf("alice holds %d bytes, want 8", got)
	}
	mustPut(t, s, "alice-big", "alice", make([]byte, 50)) // over the quota alone: cut to it
	if got, _ := s.Get("alice-big", "alice"); len(got) != 10 {
		t.Errorf("an output over the quota kept at %d bytes, want 10", len(got))
	}
	if _, ok := s.Get("bob-1", "bob"); !ok {
		t.Error("alice's big output pushed out bob's")
	}
}

func TestStoreKeepsOutputsInTheStateStoreForTheNextServer(t *testing.T) {
	st := store.NewMemory()
	big := bytes.Repeat([]byte("0123456789abcdef"), store.ChunkSize/16*2+100) // three chunks
	first := New(st, "outputs", 64<<20, 0, time.Hour)
	if err := first.Put("mcr://runs/1/stdout", "alice", big); err != nil {
		t.Fatal(err)
	}
	// Another server (a restart, a replica) on the same state store.
	next := New(st, "outputs", 64<<20, 0, time.Hour)
	got, ok := next.Get("mcr://runs/1/stdout", "alice")
	if !ok || !bytes.Equal(got, big) {
		t.Fatalf("the next server reads %d bytes (%v), want the %d kept", len(got), ok, len(big))
	}
	if _, ok := next.Get("mcr://runs/1/stdout", "bob"); ok {
		t.Error("the next server serves alice's output to bob")
	}
	if got := next.List("alice"); len(got) != 1 || got[0] != "mcr://runs/1/stdout" {
		t.Errorf("the next server lists %v for alice", got)
	}
	// Artifacts share the state store under keys of their own.
	if _, ok := New(st, "artifacts", 64<<20, 0, time.Hour).Get("mcr://runs/1/stdout", "alice"); ok {
		t.Error("an output read as an artifact")
	}
}

func TestStoreLeavesNoChunksBehindWhatItForgets(t *testing.T) {
	st := store.NewMemory()
	s := New(st, "outputs", 2*store.ChunkSize, 0, time.Hour)
	mustPut(t, s, "a", "alice", make([]byte, store.ChunkSize+1))
	mustPut(t, s, "a", "alice", []byte("short")) // replaced: its two chunks go
	mustPut(t, s, "b", "alice", make([]byte, 2*store.ChunkSize))
	left, _ := st.List(t.Context(), "outputs/")
	var keys []string
	for _, e := range left {
		keys = append(keys, e.Key)
	}
	// b alone fills the store: a (replaced, then evicted) leaves nothing.
	if len(keys) != 3 {
		t.Errorf("keys left: %v, want b's record and two chunks", keys)
	}
}

// mustPut keeps data under uri for owner, failing the test if the store
// refuses it.
func mustPut(t *testing.T, s *Store, uri, owner string, data []byte) {
	t.Helper()
	if err := s.Put(uri, owner, data); err != nil {
		t.Fatalf("Put(%q): %v", uri, err)
	}
}
