//go:build !fast

package sessions_test

import (
	"context"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// TestForkKeepsStateAndLeavesTheOriginal is the measure of a
// fork: a large list built in the original, grown in the fork only.
func TestForkKeepsStateAndLeavesTheOriginal(t *testing.T) {
	cases := []struct {
		lang, build, grow, length, write string
		mode                             string
		replayed                         int
	}{
		// Python's interpreter forks in place; Node.js's cannot (its
		// process has threads), so its cells are replayed.
		{"python", "x = [i for i in range(10**6)]", "x.append(1)", "len(x)", "open('notes.txt','w').write('kept')", sessions.ModeForked, 0},
		{"javascript", "let x = Array.from({length: 10**6}, (_, i) => i)", "x.push(1)", "x.length", "require('fs').writeFileSync('notes.txt', 'kept')", sessions.ModeReplayed, 2},
	}
	for _, c := range cases {
		t.Run(c.lang, func(t *testing.T) {
			m := manager(t, nil, c.lang)
			ctx := context.Background()
			orig := create(t, m, c.lang, 0)
			run(t, m, orig, c.build)
			run(t, m, orig, c.write)
			run(t, m, orig, "this is not code (")
			fork, err := m.Fork(ctx, orig)
			if err != nil {
				t.Fatal(err)
			}
			if fork.Mode != c.mode || fork.CellsReplayed != c.replayed || fork.FilesCopied != 1 || fork.ForkedFrom != orig || fork.Session.SessionID == orig {
				t.Fatalf("fork result %+v, want mode %s, %d cells replayed (not the failed one) and 1 file", fork, c.mode, c.replayed)
			}
			id := fork.Session.SessionID
			run(t, m, id, c.grow)
			if r := run(t, m, id, c.length); r.Value != "1000001" {
				t.Errorf("the fork's length: %+v", r)
			}
			if r := run(t, m, orig, c.length); r.Value != "1000000" {
				t.Errorf("the original's length after the fork grew: %+v", r)
			}
			got, err := m.ReadFile(ctx, id, "notes.txt")
			if err != nil || string(got.Data) != "kept" {
				t.Errorf("the fork's copy of the workspace: %q, %v", got.Data, err)
			}
		})
	}
}

func TestForkPastTheReplayBoundIsRefusedWhereItReplays(t *testing.T) {
	cfg := config.Default()
	cfg.Sessions.ReplayMaxCells = 2
	m := manager(t, &cfg, "javascript", "python")
	id := create(t, m, "javascript", 0)
	for range 3 {
		run(t, m, id, "y = 1")
	}
	if _, err := m.Fork(context.Background(), id); err == nil || !strings.Contains(err.Error(), "sessions.replay_max_cells") {
		t.Fatalf("fork past the bound: %v", err)
	}
	if r := run(t, m, id, "y + 1"); r.Value != "2" {
		t.Errorf("the session after a refused fork: %+v", r)
	}
	// A fork in place needs no replay: Python's forks past the bound.
	py := create(t, m, "python", 0)
	for range 3 {
		run(t, m, py, "y = 1")
	}
	if f, err := m.Fork(context.Background(), py); err != nil || f.Mode != sessions.ModeForked {
		t.Fatalf("a Python fork past the bound: %+v, %v", f, err)
	}
}
