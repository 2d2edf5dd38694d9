package replicas_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

func TestWorkIsOrphanedOnlyWhenItsServerIsGoneOrIsThisOneStarting(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	live := replicas.NewHeartbeat(st, "live", slog.New(slog.DiscardHandler))
	if err := live.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	gone := replicas.NewHeartbeat(st, "gone", slog.New(slog.DiscardHandler))
	if err := gone.Beat(ctx); err != nil {
		t.Fatal(err)
	}
	if err := gone.Leave(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		holder  string
		atStart bool
		want    bool
	}{
		{"live", false, false},
		{"live", true, false},
		{"gone", false, true},
		{"never-seen", false, true},
		{"self", false, false},
		{"self", true, true},
	} {
		got, err := replicas.NewLiveness(st, "self").Orphaned(ctx, tt.holder, tt.atStart)
		if err != nil || got != tt.want {
			t.Errorf("Orphaned(%q, at start %v) = %v, %v; want %v", tt.holder, tt.atStart, got, err, tt.want)
		}
	}
}

func TestOfTwoSurvivorsOneClaimsAGoneServersRecord(t *testing.T) {
	ctx := context.Background()
	st := store.NewMemory()
	if err := st.Put(ctx, "sessions/s1", []byte(`{"id":"s1","replica":"gone","calls":3}`), 0); err != nil {
		t.Fatal(err)
	}
	if err := replicas.Claim(ctx, st, "sessions/s1", "gone", "a"); err != nil {
		t.Fatalf("the first claim: %v", err)
	}
	if err := replicas.Claim(ctx, st, "sessions/s1", "gone", "b"); !errors.Is(err, replicas.ErrClaimed) {
		t.Fatalf("the second claim: %v, want ErrClaimed", err)
	}
	if err := replicas.Claim(ctx, st, "sessions/missing", "gone", "b"); !errors.Is(err, replicas.ErrClaimed) {
		t.Fatalf("a claim of a record that is gone: %v, want ErrClaimed", err)
	}
	raw, err := st.Get(ctx, "sessions/s1")
	if err != nil {
		t.Fatal(err)
	}
	var rec struct {
		ID      string `json:"id"`
		Replica string `json:"replica"`
		Calls   int    `json:"calls"`
	}
	if err := json.Unmarshal(raw, &rec); err != nil || rec.ID != "s1" || rec.Replica != "a" || rec.Calls != 3 {
		t.Errorf("the claimed record: %s (%v), want s1 held by a with its other fields kept", raw, err)
	}
}
