package mcpserver_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver"
	"github.com/mcp-code-runner/mcp-code-runner/internal/mcpserver/transport"
	"github.com/mcp-code-runner/mcp-code-runner/internal/outputs"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// TestEachRequestIsItsTokensPrincipal puts outputs of two principals into
// the store and reads them over HTTP with each token: only the owner's
// token reads (and completes) its own.
func TestEachRequestIsItsTokensPrincipal(t *testing.T) {
	t.Parallel()
	eng := offlineEngine(t)
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/aaaa000000000001/stdout", "alice", []byte("alice's output")); err != nil {
		t.Fatal(err)
	}
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/bbbb000000000002/stdout", "bob", []byte("bob's output")); err != nil {
		t.Fatal(err)
	}
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/cccc000000000003/stdout", mcpserverBareName, []byte("bare token's output")); err != nil {
		t.Fatal(err)
	}
	server := mcpserver.New(eng, "test", nil)
	ts := httptest.NewServer(transport.HTTPHandler(server, transport.HTTPOptions{
		MaxBodyBytes: 1 << 20, Tokens: teamTokens, BearerTokens: []string{"bare-s3cret"},
	}))
	t.Cleanup(ts.Close)
	cases := []struct {
		token    string
		readable string
		runIDs   []string
	}{
		{"alice-s3cret", "mcr://runs/aaaa000000000001/stdout", []string{"aaaa000000000001"}},
		{"bob-s3cret", "mcr://runs/bbbb000000000002/stdout", []string{"bbbb000000000002"}},
		{"bare-s3cret", "mcr://runs/cccc000000000003/stdout", []string{"cccc000000000003"}},
		{"ops-s3cret", "", nil}, // operators read no one's output
	}
	for _, c := range cases {
		cs := connectAs(t, ts.URL, c.token)
		for _, uri := range []string{"mcr://runs/aaaa000000000001/stdout", "mcr://runs/bbbb000000000002/stdout", "mcr://runs/cccc000000000003/stdout"} {
			_, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri})
			if (err == nil) != (uri == c.readable) {
				t.Errorf("token %s reading %s: %v", c.token, uri, err)
			}
		}
		res, err := cs.Complete(context.Background(), &mcp.CompleteParams{
			Ref:      &mcp.CompleteReference{Type: "ref/resource", URI: mcpserver.RunOutputTemplate},
			Argument: mcp.CompleteParamsArgument{Name: "run_id", Value: ""},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.Completion.Values, c.runIDs) {
			t.Errorf("token %s completes run ids %v, want %v", c.token, res.Completion.Values, c.runIDs)
		}
	}
}

// mcpserverBareName is the name of the bare token "bare-s3cret".
var mcpserverBareName = config.BareTokenName("bare-s3cret")

// TestOAuthSubjectIsThePrincipal checks that an introspected token is its
// subject's (or, without one, its client's) principal.
func TestOAuthSubjectIsThePrincipal(t *testing.T) {
	t.Parallel()
	intro := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		exp := time.Now().Add(time.Hour).Unix()
		switch r.Form.Get("token") {
		case "carol-token":
			fmt.Fprintf(w, `{"active":true,"sub":"carol","client_id":"app","scope":"run","exp":%d}`, exp)
		case "service-token":
			fmt.Fprintf(w, `{"active":true,"client_id":"batch","scope":"run","exp":%d}`, exp)
		case "nobody-token":
			fmt.Fprintf(w, `{"active":true,"scope":"run","exp":%d}`, exp)
		default:
			fmt.Fprint(w, `{"active":false}`)
		}
	}))
	t.Cleanup(intro.Close)
	eng := offlineEngine(t)
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/c000000000000001/stdout", "carol", []byte("carol's")); err != nil {
		t.Fatal(err)
	}
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/b000000000000002/stdout", "batch", []byte("batch's")); err != nil {
		t.Fatal(err)
	}
	server := mcpserver.New(eng, "test", nil)
	ts := httptest.NewServer(transport.HTTPHandler(server, transport.HTTPOptions{
		MaxBodyBytes: 1 << 20,
		OAuth: transport.OAuthOptions{Issuer: "https://issuer.example", IntrospectionURL: intro.URL,
			ResourceURL: "http://127.0.0.1/mcp", Scopes: []string{"run"}},
	}))
	t.Cleanup(ts.Close)
	for token, own := range map[string]string{"carol-token": "mcr://runs/c000000000000001/stdout", "service-token": "mcr://runs/b000000000000002/stdout"} {
		cs := connectAs(t, ts.URL, token)
		for _, uri := range []string{"mcr://runs/c000000000000001/stdout", "mcr://runs/b000000000000002/stdout"} {
			if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: uri}); (err == nil) != (uri == own) {
				t.Errorf("%s reading %s: %v", token, uri, err)
			}
		}
	}
	if code := postRaw(t, ts.URL, "nobody-token", initBody); code != http.StatusUnauthorized {
		t.Errorf("a token with neither subject nor client: status %d, want 401", code)
	}
}

// TestStdioIsTheLocalPrincipal checks that without HTTP authentication the
// one local principal owns the work.
func TestStdioIsTheLocalPrincipal(t *testing.T) {
	t.Parallel()
	eng := offlineEngine(t)
	if err := outputs.Runs(eng.Config(), eng.Store()).Put("mcr://runs/d000000000000001/stdout", principal.LocalName, []byte("local")); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, eng)
	if _, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "mcr://runs/d000000000000001/stdout"}); err != nil {
		t.Errorf("the local principal reads its output: %v", err)
	}
}
