package sessions_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

func as(name string, operator bool) context.Context {
	return principal.WithContext(context.Background(), principal.Principal{Name: name, Operator: operator})
}

// sameAsMissing checks that err is the answer for an id that does not
// exist: the same words, with only the id changed.
func sameAsMissing(t *testing.T, what string, err, missingErr error, id, missingID string) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: another principal's session was usable", what)
		return
	}
	if got, want := err.Error(), strings.ReplaceAll(missingErr.Error(), missingID, id); got != want {
		t.Errorf("%s: got %q, want the answer for a missing session %q", what, got, want)
	}
}

func TestSessionsBelongToTheirPrincipal(t *testing.T) {
	cfg := config.Default()
	cfg.Quotas.Sessions = 1
	m := fakeManager(t, &cfg)
	alice, bob, ops := as("alice", false), as("bob", false), as("ops", true)
	info, err := m.Create(alice, "bash", 0, sessions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	id := info.SessionID
	if err := m.WriteFiles(alice, id, []engine.InputFile{{Path: "secret.txt", Content: "alice's"}}); err != nil {
		t.Fatal(err)
	}
	const missing = "sess-0000000000000000"
	_, missingRun := m.Run(bob, engine.Request{SessionID: missing, Code: "true"}, engine.RunOptions{})
	_, missingRead := m.ReadFile(bob, missing, "secret.txt")
	_, missingClose := m.Close(bob, missing)

	_, err = m.Run(bob, engine.Request{SessionID: id, Code: "cat secret.txt"}, engine.RunOptions{})
	sameAsMissing(t, "bob runs code in alice's session", err, missingRun, id, missing)
	_, err = m.ReadFile(bob, id, "secret.txt")
	sameAsMissing(t, "bob reads alice's file", err, missingRead, id, missing)
	err = m.WriteFiles(bob, id, []engine.InputFile{{Path: "secret.txt", Content: "bob's"}})
	sameAsMissing(t, "bob writes alice's file", err, missingRead, id, missing)
	_, err = m.ListFiles(bob, id, "")
	sameAsMissing(t, "bob lists alice's files", err, missingRead, id, missing)
	_, missingFork := m.Fork(bob, missing)
	_, err = m.Fork(bob, id)
	sameAsMissing(t, "bob forks alice's session", err, missingFork, id, missing)
	_, err = m.Fork(ops, id)
	sameAsMissing(t, "the operator forks alice's session", err, missingFork, id, missing)
	_, missingPause := m.Pause(bob, missing)
	_, err = m.Pause(bob, id)
	sameAsMissing(t, "bob pauses alice's session", err, missingPause, id, missing)
	_, err = m.Close(bob, id)
	sameAsMissing(t, "bob closes alice's session", err, missingClose, id, missing)
	if got := m.List(bob); len(got) != 0 {
		t.Errorf("bob lists %+v", got)
	}
	// The operator sees it, with its owner, but cannot use it.
	_, err = m.ReadFile(ops, id, "secret.txt")
	sameAsMissing(t, "the operator reads alice's file", err, missingRead, id, missing)
	if got := m.List(ops); len(got) != 1 || got[0].SessionID != id || got[0].Owner != "alice" {
		t.Errorf("the operator lists %+v, want alice's session with its owner", got)
	}
	if got := m.List(alice); len(got) != 1 || got[0].Owner != "" {
		t.Errorf("alice lists %+v, want her session without an owner field", got)
	}

	// Alice is at her quota; bob is not affected.
	if _, err := m.Create(alice, "bash", 0, sessions.Options{}); err == nil || !strings.Contains(err.Error(), "quota") || !strings.Contains(err.Error(), "quotas.sessions") || engine.CodeOf(err) != engine.CodeQuota {
		t.Errorf("alice over her quota: %v", err)
	}
	if _, err := m.Fork(alice, id); err == nil || engine.CodeOf(err) != engine.CodeQuota {
		t.Errorf("alice forks over her quota: %v", err)
	}
	bobs, err := m.Create(bob, "bash", 0, sessions.Options{})
	if err != nil {
		t.Fatalf("bob is refused while alice is at her quota: %v", err)
	}
	if r, err := m.Run(bob, engine.Request{SessionID: bobs.SessionID, Code: "echo bob"}, engine.RunOptions{}); err != nil || r.Stdout != "bob\n" {
		t.Errorf("bob's run: %+v, %v", r, err)
	}

	// The operator pauses it (managing it, as closing does), still
	// without using it.
	if r, err := m.Pause(ops, id); err != nil || r.SessionID != id {
		t.Fatalf("the operator pauses alice's session: %+v, %v", r, err)
	}
	if got := m.List(ops); len(got) != 2 || !slices.ContainsFunc(got, func(i sessions.Info) bool { return i.SessionID == id && i.Paused }) {
		t.Errorf("the operator lists %+v, want alice's session paused", got)
	}
	_, err = m.ReadFile(ops, id, "secret.txt")
	sameAsMissing(t, "the operator reads alice's paused session's file", err, missingRead, id, missing)
	if closed, err := m.Close(ops, id); err != nil || closed.Owner != "alice" {
		t.Errorf("the operator closes alice's session: %+v, %v", closed, err)
	}
	if got := m.List(alice); len(got) != 0 {
		t.Errorf("alice's session still listed after the operator closed it: %+v", got)
	}
}
