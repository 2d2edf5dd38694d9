// Package sandbox defines how the engine runs one job in an isolated
// environment. Backends (Docker now; Kubernetes and gVisor later) implement
// Backend; every backend runs the same in-container agent and speaks the
// agent's framed protocol, so the engine does not care where a run happens.
package sandbox

import (
	"context"
	"errors"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
)

// Resources are the hard limits of one sandbox.
type Resources struct {
	MemoryMB    int
	CPUs        float64
	PidsLimit   int
	WorkspaceMB int
	TmpMB       int
	NoFile      int
	FileSizeMB  int
}

// Spec is one job for one fresh sandbox.
type Spec struct {
	// Image is the runtime image reference.
	Image string
	// Request is what the agent runs.
	Request agent.Request
	// Resources bound the sandbox.
	Resources Resources
	// Deadline bounds the sandbox's whole life, from create to result; past it
	// the sandbox is killed and the result says so.
	Deadline time.Duration
	// RunID names the run in labels and logs.
	RunID string
}

// Stream tells standard output from standard error.
type Stream int

// The two output streams.
const (
	Stdout Stream = iota
	Stderr
)

// Chunk is output as it arrives, for streaming to a client.
type Chunk struct {
	Stage  int
	Stream Stream
	Data   []byte
}

// StageOutput is one stage's result with the output the agent forwarded.
type StageOutput struct {
	agent.StageResult
	Stdout []byte
	Stderr []byte
}

// Result is what a sandbox run produced. Output received before a failure
// is kept.
type Result struct {
	Stages []StageOutput
	// Killed is set when the sandbox was stopped from outside: the deadline
	// passed, or the caller's context ended.
	Killed bool
	// OOMKilled is set when the sandbox's memory limit was hit.
	OOMKilled bool
	// AgentError is the agent's refusal of the request, if any.
	AgentError string
	// Incomplete is set when the agent ended without a Done frame.
	Incomplete bool
	// Diagnostics holds what the agent printed on its stderr.
	Diagnostics string
}

// Backend runs jobs in sandboxes.
type Backend interface {
	// Run executes spec in a new sandbox that no other run has touched, and
	// removes the sandbox before it returns, whatever happens. onChunk, if
	// not nil, sees output as it arrives.
	Run(ctx context.Context, spec Spec, onChunk func(Chunk)) (*Result, error)
	// Check reports whether the backend can run sandboxes at all.
	Check(ctx context.Context) error
	// CheckImage reports whether image is present, with what to do if not.
	CheckImage(ctx context.Context, image string) error
	// ImageLabels returns the labels of a runtime image (runtime versions are
	// recorded there when the image is built).
	ImageLabels(ctx context.Context, image string) (map[string]string, error)
	// Sweep removes sandboxes that a dead server left behind.
	Sweep(ctx context.Context) (removed int, err error)
	// Close releases the backend's resources.
	Close() error
}

// ErrImageMissing wraps errors about a runtime image that is not present.
var ErrImageMissing = errors.New("runtime image missing")

// ErrUnavailable wraps errors about a backend that cannot be reached.
var ErrUnavailable = errors.New("sandbox backend unavailable")
