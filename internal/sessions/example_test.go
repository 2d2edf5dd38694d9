package sessions_test

import (
	"context"
	"fmt"
	"os"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// A session is one sandbox for many calls: what a call leaves in the
// workspace, the next one finds. The fake backend runs the real agent in
// this process (its programs are processes of this host: fine for an
// example, never for untrusted code).
func ExampleManager_Run() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	backend := fake.New(dir)
	defer backend.Close()
	e := engine.New(config.Default(), languages.Builtin(), backend, nil)
	defer e.Close(context.Background())
	m := sessions.NewManager(e)
	defer m.Shutdown()

	ctx := context.Background()
	info, err := m.Create(ctx, "bash", 0, sessions.Options{})
	if err != nil {
		panic(err)
	}
	for _, code := range []string{"echo 'kept between calls' > note.txt", "cat note.txt"} {
		res, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: code}, engine.RunOptions{})
		if err != nil {
			panic(err)
		}
		fmt.Printf("%s %q\n", res.Status, res.Stdout)
	}
	if _, err := m.Close(ctx, info.SessionID); err != nil {
		panic(err)
	}
	// Output:
	// ok ""
	// ok "kept between calls\n"
}
