package approval

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// TestAllListsEveryPrincipalsApprovalsInForce: the operator's view names
// each approval's owner (names with slashes included) and leaves out those
// whose TTL ended.
func TestAllListsEveryPrincipalsApprovalsInForce(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2026, 12, 5, 6, 0, 0, 0, time.UTC)}
	a := New(store.NewMemory(), time.Hour, c.now)
	for _, g := range [][2]string{{"bob", "b.example.com"}, {"team/alice", "a.example.com"}, {"bob", "a.example.com"}} {
		if _, err := a.Approve(ctx, g[0], g[1]); err != nil {
			t.Fatal(err)
		}
	}
	got, err := a.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	exp := c.t.Add(time.Hour)
	want := []Grant{{"bob", "a.example.com", exp}, {"bob", "b.example.com", exp}, {"team/alice", "a.example.com", exp}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("All = %v, want %v", got, want)
	}
	c.t = c.t.Add(time.Hour)
	if got, _ := a.All(ctx); len(got) != 0 {
		t.Errorf("after the TTL: %v", got)
	}
}
