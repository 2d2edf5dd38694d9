package replicas_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// target answers "echo" with the principal and body it got, after two
// chunks of output, and "fail" with an engine error.
type target struct{}

func (target) ServeForwarded(ctx context.Context, op string, body json.RawMessage, onChunk func(sandbox.Chunk)) (any, error) {
	switch op {
	case "echo":
		onChunk(sandbox.Chunk{Stream: sandbox.Stdout, Data: []byte("one ")})
		onChunk(sandbox.Chunk{Stream: sandbox.Stderr, Data: []byte("two")})
		return map[string]any{"principal": principal.FromContext(ctx).Name, "body": body}, nil
	default:
		return nil, &engine.Error{Code: engine.CodeInvalid, Message: "unknown session \"s\""}
	}
}

// twoReplicas joins a and b to one store; b serves target.
func twoReplicas(t *testing.T) (a *replicas.Directory, st store.Store) {
	t.Helper()
	st = store.NewMemory()
	log := slog.New(slog.DiscardHandler)
	mux := http.NewServeMux()
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	b, err := replicas.Join(context.Background(), st, "b", srv.URL, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	mux.Handle(replicas.Path, b.Handler(target{}))
	a, err = replicas.Join(context.Background(), st, "a", "http://127.0.0.1:1", log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(a.Close)
	return a, st
}

func TestAForwardedCallRunsAsTheCallersPrincipalAndStreamsItsOutput(t *testing.T) {
	a, _ := twoReplicas(t)
	ctx := principal.WithContext(context.Background(), principal.Principal{Name: "alice"})
	var out strings.Builder
	raw, err := a.Call(ctx, "b", "echo", map[string]string{"code": "x"}, func(c sandbox.Chunk) { out.Write(c.Data) })
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Principal string            `json:"principal"`
		Body      map[string]string `json:"body"`
	}
	if err := json.Unmarshal(raw, &got); err != nil {
		t.Fatal(err)
	}
	if got.Principal != "alice" || got.Body["code"] != "x" || out.String() != "one two" {
		t.Errorf("got %+v and output %q; want alice's call with its body, its output streamed", got, out.String())
	}
}

func TestAnErrorOfTheHolderComesBackWithItsCode(t *testing.T) {
	a, _ := twoReplicas(t)
	_, err := a.Call(context.Background(), "b", "fail", struct{}{}, nil)
	var ee *engine.Error
	if !errors.As(err, &ee) || ee.Code != engine.CodeInvalid || !strings.Contains(ee.Message, "unknown session") {
		t.Errorf("got %v, want the holder's invalid_argument error", err)
	}
}

func TestAReplicaThatAdvertisesNothingIsGone(t *testing.T) {
	a, _ := twoReplicas(t)
	if _, err := a.Call(context.Background(), "c", "echo", struct{}{}, nil); !errors.Is(err, replicas.ErrGone) {
		t.Errorf("got %v, want ErrGone", err)
	}
}

func TestACallWithoutThePeersKeyFindsNothing(t *testing.T) {
	st := store.NewMemory()
	b, err := replicas.Join(context.Background(), st, "b", "http://127.0.0.1:1", slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	srv := httptest.NewServer(b.Handler(target{}))
	defer srv.Close()
	for name, key := range map[string]string{"no key": "", "a wrong key": strings.Repeat("0", 64)} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"principal":{"Name":"alice"},"op":"echo","body":{}}`))
		if key != "" {
			req.Header.Set("X-Mcr-Peer-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || strings.Contains(string(body), "alice") {
			t.Errorf("%s: %s %q, want 404 and nothing run", name, resp.Status, body)
		}
	}
}

func TestEveryReplicaGetsTheKeyTheFirstOneMade(t *testing.T) {
	st := store.NewMemory()
	log := slog.New(slog.DiscardHandler)
	var keys []string
	for _, name := range []string{"a", "b"} {
		d, err := replicas.Join(context.Background(), st, name, "http://127.0.0.1:1", log)
		if err != nil {
			t.Fatal(err)
		}
		defer d.Close()
		k, _ := st.Get(context.Background(), "peers-key")
		keys = append(keys, string(k))
	}
	if keys[0] == "" || keys[0] != keys[1] {
		t.Errorf("keys %q, want one key shared", keys)
	}
}
