package engine_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/fake"
)

// An engine runs a program in a fresh sandbox of its backend and shapes
// what the program did into a [engine.Result]. The fake backend runs the
// real agent in this process, so the program is a real process of this
// host: fine for an example, never for untrusted code.
func ExampleEngine_Run() {
	dir, err := os.MkdirTemp("", "example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	backend := fake.New(dir)
	defer backend.Close()
	e := engine.New(config.Default(), languages.Builtin(), backend, nil)
	defer e.Close(context.Background())

	res, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: `echo "hello, $1"`, Args: []string{"world"}}, engine.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Status, res.ExitCode)
	fmt.Print(res.Stdout)
	// Output:
	// ok 0
	// hello, world
}

// echoBackend is a sandbox.Backend of its own: its sandboxes run nothing
// and print the command each stage would have run. A real backend starts
// the agent in an isolated sandbox and talks to it (see
// internal/sandbox/agentconn); the engine needs no more than the interface.
type echoBackend struct{ made atomic.Int64 }

func (b *echoBackend) Create(context.Context, sandbox.Template) (sandbox.Sandbox, error) {
	return &echoSandbox{id: fmt.Sprintf("echo-%d", b.made.Add(1)), ended: make(chan struct{})}, nil
}
func (b *echoBackend) Check(context.Context) error                    { return nil }
func (b *echoBackend) CheckImage(context.Context, string) error       { return nil }
func (b *echoBackend) Architecture(context.Context) string            { return "amd64" }
func (b *echoBackend) Sweep(context.Context) (int, error)             { return 0, nil }
func (b *echoBackend) RemoveOwn(context.Context, string) (int, error) { return 0, nil }
func (b *echoBackend) Close() error                                   { return nil }

type echoSandbox struct {
	id    string
	ended chan struct{}
}

func (s *echoSandbox) ID() string                  { return s.id }
func (s *echoSandbox) Ready(context.Context) error { return nil }
func (s *echoSandbox) Exec(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	return s.Call(ctx, job, onChunk)
}
func (s *echoSandbox) Call(_ context.Context, job sandbox.Job, _ func(sandbox.Chunk)) (*sandbox.Result, error) {
	res := &sandbox.Result{}
	for _, st := range job.Request.Stages {
		out := sandbox.StageOutput{Stdout: []byte("would run: " + strings.Join(st.Argv, " ") + "\n")}
		out.Name = st.Name
		res.Stages = append(res.Stages, out)
	}
	return res, nil
}
func (s *echoSandbox) Ended() <-chan struct{} { return s.ended }
func (s *echoSandbox) Close()                 {}

// Any [sandbox.Backend] runs the engine's programs: here one that prints
// what it was asked to run instead of running it.
func ExampleNew_customBackend() {
	e := engine.New(config.Default(), languages.Builtin(), &echoBackend{}, nil)
	defer e.Close(context.Background())

	res, err := e.Run(context.Background(), engine.Request{Language: "bash", Code: "echo hi"}, engine.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Print(res.Stdout)
	// Output:
	// would run: bash main.sh
}
