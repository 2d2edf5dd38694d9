package engine_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/testutil"
)

// isolatingBackend is the fake backend, said to make gVisor's sandboxes
// too, that records the isolation of every sandbox it is asked for.
type isolatingBackend struct {
	sandbox.Backend
	mu   sync.Mutex
	made []sandbox.Isolation
}

func (b *isolatingBackend) IsolationSupport(sandbox.Isolation) error { return nil }

func (b *isolatingBackend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	b.mu.Lock()
	b.made = append(b.made, t.Isolation.Or())
	b.mu.Unlock()
	return b.Backend.Create(ctx, t)
}

func (b *isolatingBackend) last() sandbox.Isolation {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.made[len(b.made)-1]
}

// A run's isolation is the strongest of what it asked, the operator's and
// what the operator requires of its principal: a request tightens, never
// loosens; the sandbox is made with it and the result names it.
func TestIsolationIsTheStrongestOfRequestOperatorAndPrincipal(t *testing.T) {
	for _, tc := range []struct {
		name      string
		operator  string
		required  []string
		principal string
		asked     string
		want      sandbox.Isolation
	}{
		{"nothing asked: the operator's container", "container", nil, "alice", "", sandbox.IsolationContainer},
		{"a call tightens to gvisor", "container", nil, "alice", "gvisor", sandbox.IsolationGVisor},
		{"a call cannot loosen the operator's gvisor", "gvisor", nil, "alice", "container", sandbox.IsolationGVisor},
		{"a principal the operator requires gvisor of", "container", []string{"bob"}, "bob", "", sandbox.IsolationGVisor},
		{"that principal cannot loosen it", "container", []string{"bob"}, "bob", "container", sandbox.IsolationGVisor},
		{"another principal keeps the operator's", "container", []string{"bob"}, "alice", "", sandbox.IsolationContainer},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config.Default()
			cfg.Isolation, cfg.GVisor.RequiredFor = tc.operator, tc.required
			b := &isolatingBackend{Backend: testutil.FakeBackend(t)}
			e := engine.New(cfg, languages.Builtin(), b, nil)
			ctx := principal.WithContext(context.Background(), principal.Principal{Name: tc.principal})
			r, err := e.Run(ctx, engine.Request{Language: "bash", Code: "echo hi", Isolation: tc.asked}, engine.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got := b.last(); got != tc.want {
				t.Errorf("the sandbox was made with isolation %s, want %s", got, tc.want)
			}
			if r.Isolation != string(tc.want) {
				t.Errorf("the result names isolation %q, want %q", r.Isolation, tc.want)
			}
		})
	}
}

// A request for an isolation that does not exist, or that the backend
// cannot make here, is refused with what to do, and no sandbox is made.
func TestAnIsolationThatCannotBeMadeIsRefusedClearly(t *testing.T) {
	e, _ := testutil.FakeEngine(t, nil)
	for _, tc := range []struct{ asked, code, says string }{
		{"vm", engine.CodeInvalid, "want container or gvisor"},
		{"gvisor", engine.CodeUnavailable, "make gvisor"},
	} {
		_, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo hi", Isolation: tc.asked}, engine.RunOptions{})
		if err == nil || engine.CodeOf(err) != tc.code || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("isolation %q: got %v (code %s), want code %s saying %q", tc.asked, err, engine.CodeOf(err), tc.code, tc.says)
		}
	}
}
