package testutil

import (
	"context"
	"testing"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
)

// FakeBackend returns the in-process backend (the real agent over pipes,
// no Docker); when the test ends it checks that every sandbox was removed.
func FakeBackend(t testing.TB) *fake.Backend {
	t.Helper()
	b := fake.New(t.TempDir())
	t.Cleanup(func() {
		// Removals run in the background after a run answers.
		if !WaitFor(10*time.Second, func() bool { _, _, live := b.Counts(); return live == 0 }) {
			t.Errorf("sandboxes left behind: %v", b.Live())
		}
		_ = b.Close()
	})
	return b
}

// FakeEngine returns an engine on a fresh FakeBackend with cfg (Default()
// when nil), the built-in registry and opts, closed when the test ends.
func FakeEngine(t testing.TB, cfg *config.Config, opts ...engine.Option) (*engine.Engine, *fake.Backend) {
	t.Helper()
	c := config.Default()
	if cfg != nil {
		c = *cfg
	}
	Unhurried(&c)
	b := FakeBackend(t)
	e := engine.New(c, languages.Builtin(), b, nil, opts...)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := e.Close(ctx); err != nil {
			t.Error(err)
		}
	})
	return e, b
}

// Eventually waits until cond holds, checking it every few milliseconds,
// and fails the test with what when it does not within limit. It is how a
// test waits for something that happens in the background.
func Eventually(t testing.TB, limit time.Duration, cond func() bool, what string) {
	t.Helper()
	if !WaitFor(limit, cond) {
		t.Fatalf("waited %s for: %s", limit, what)
	}
}

// WaitFor waits until cond holds or limit passes, and reports whether it
// holds.
func WaitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
	return true
}

// Unhurried gives a test's runs minutes where c keeps the product's default
// run and compile timeouts: the fake backend runs programs on the host, and
// a loaded CI machine can take seconds to start an interpreter, so a test
// that is not about timeouts must not fail on one. A test that sets its own
// timeout (in c or in the request) keeps it.
func Unhurried(c *config.Config) {
	def := config.Default().Limits
	if c.Limits.TimeoutSeconds == def.TimeoutSeconds {
		c.Limits.TimeoutSeconds = 120
	}
	if c.Limits.CompileTimeoutSeconds == def.CompileTimeoutSeconds {
		c.Limits.CompileTimeoutSeconds = 120
	}
	c.Limits.MaxTimeoutSeconds = max(c.Limits.MaxTimeoutSeconds, c.Limits.TimeoutSeconds, c.Limits.CompileTimeoutSeconds)
}
