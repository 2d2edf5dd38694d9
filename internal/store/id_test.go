package store_test

import (
	"context"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// TestAStoresIDIsWrittenOnceAndReadByEveryServer: the first server on a
// store names it; every later one, or a replica, reads the same name back;
// another store has another.
func TestAStoresIDIsWrittenOnceAndReadByEveryServer(t *testing.T) {
	ctx := context.Background()
	shared, other := store.NewMemory(), store.NewMemory()
	first, err := store.ID(ctx, shared)
	if err != nil || first == "" {
		t.Fatalf("the first server's ID: %q, %v", first, err)
	}
	if again, err := store.ID(ctx, shared); err != nil || again != first {
		t.Errorf("a later server on the same store: %q, %v; want %q", again, err, first)
	}
	if theirs, err := store.ID(ctx, other); err != nil || theirs == first {
		t.Errorf("another store: %q, %v; want a name of its own", theirs, err)
	}
}
