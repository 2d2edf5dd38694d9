package sessions_test

import (
	"context"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

func TestAPythonSessionForksInItsSandboxWithItsLiveStateAndFilesOfItsOwn(t *testing.T) {
	cfg := config.Default()
	cfg.DataDir = t.TempDir()
	testForkInPlace(t, fakeManager(t, &cfg))
}

// testForkInPlace checks fork_session's fork in place (mode forked): the
// issue's million-integer list, files of its own, pause refused while the
// sandbox is shared, and either session closing first.
func testForkInPlace(t *testing.T, m *sessions.Manager) {
	t.Helper()
	ctx := context.Background()
	id := create(t, m, "python", 0)
	run(t, m, id, "x = [i for i in range(10**6)]")
	if err := m.WriteFiles(ctx, id, []engine.InputFile{{Path: "data.txt", Content: "original"}}); err != nil {
		t.Fatal(err)
	}
	f, err := m.Fork(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if f.Mode != sessions.ModeForked || f.SharesSandbox == nil || f.SharesSandbox.With != id || f.FilesCopied != 1 || f.CellsReplayed != 0 {
		t.Fatalf("fork result %+v", f)
	}
	fork := f.Session.SessionID
	run(t, m, fork, "x.append(1)")
	if got := run(t, m, fork, "len(x)").Value; got != "1000001" {
		t.Errorf("len(x) in the fork: %s", got)
	}
	if got := run(t, m, id, "len(x)").Value; got != "1000000" {
		t.Errorf("len(x) in the original: %s", got)
	}
	run(t, m, fork, "open('data.txt', 'w').write('fork')")
	for sid, want := range map[string]string{id: "original", fork: "fork"} {
		if a, err := m.ReadFile(ctx, sid, "data.txt"); err != nil || string(a.Data) != want {
			t.Errorf("data.txt of %s: %q, %v (want %q)", sid, a.Data, err, want)
		}
	}
	if files, err := m.ListFiles(ctx, id, ""); err != nil || len(files) != 1 {
		t.Errorf("the original's files: %+v, %v (want data.txt alone)", files, err)
	}
	// Paused, the original gives up its interpreter alone; the fork goes on.
	if _, err := m.Pause(ctx, id); err != nil {
		t.Fatalf("pausing a session whose sandbox a fork shares: %v", err)
	}
	if got := run(t, m, fork, "len(x)").Value; got != "1000001" {
		t.Errorf("the fork after the original paused: %s", got)
	}
	if r := run(t, m, id, "len(x), open('data.txt').read()"); r.Value != "(1000000, 'original')" || r.Resumed == nil {
		t.Errorf("the original resumed: %q, %+v", r.Value, r.Resumed)
	}

	// The fork of a fork, then the original closes first: the forks go on.
	f2, err := m.Fork(ctx, fork)
	if err != nil || f2.Mode != sessions.ModeForked {
		t.Fatalf("the fork of a fork: %+v, %v", f2, err)
	}
	if _, err := m.Close(ctx, id); err != nil {
		t.Fatal(err)
	}
	if got := run(t, m, f2.Session.SessionID, "len(x), open('data.txt').read()").Value; got != "(1000001, 'fork')" {
		t.Errorf("the fork of the fork after the original closed: %s", got)
	}
	if _, err := m.Close(ctx, fork); err != nil {
		t.Fatal(err)
	}
	// The last one holds the sandbox alone, and may pause.
	last := f2.Session.SessionID
	if _, err := m.Pause(ctx, last); err != nil {
		t.Fatalf("pausing the last session of the sandbox: %v", err)
	}
	if r := run(t, m, last, "len(x)"); r.Value != "1000001" || r.Resumed == nil {
		t.Errorf("after its resume: %q, %+v", r.Value, r.Resumed)
	}

	// A session whose interpreter ran nothing yet is forked by replay.
	fresh := create(t, m, "python", 0)
	if f, err := m.Fork(ctx, fresh); err != nil || f.Mode != sessions.ModeReplayed {
		t.Errorf("forking a session that ran no code: %+v, %v", f, err)
	}
}
