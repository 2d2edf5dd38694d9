// Package sandbox defines how the engine runs one job in an isolated
// environment. Backends (docker, crun, kubernetes, and fake for tests)
// implement [Backend], whose [Sandbox] runs a [Job] to a [Result]; every
// backend runs the same in-container agent and speaks the agent's framed
// protocol, so the engine does not care where a run happens.
package sandbox

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Resources are the hard limits of one sandbox. The backend enforces the
// sandbox's own (memory, CPUs, processes, the sizes of the workspace and
// /tmp); the agent applies the per-process ones to itself at boot
// ([wire.Limits], from AgentEnv), so every backend gets them.
type Resources struct {
	MemoryMB    int
	CPUs        float64
	PidsLimit   int
	WorkspaceMB int
	TmpMB       int
	// NoFile is the most files a process may have open; the agent applies it.
	NoFile int
	// FileSizeMB is the largest file a process may write; the agent
	// applies it.
	FileSizeMB int
}

// AgentLimits are the per-process limits of r that the agent applies.
func (r Resources) AgentLimits() wire.Limits {
	return wire.Limits{NoFile: r.NoFile, FileSizeBytes: int64(r.FileSizeMB) << 20}
}

// AgentEnv is the environment every backend starts a sandbox's agent with:
// the mark of a sandbox, a home and a path, the limits it applies itself,
// and what it starts before the job (warm sandboxes only).
func AgentEnv(t Template) []string {
	env := []string{wire.SandboxEnv + "=1", "HOME=/tmp", "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		jsonEnv(wire.LimitsEnv, t.Resources.AgentLimits())}
	if t.Prestart != nil {
		env = append(env, jsonEnv(wire.PrestartEnv, t.Prestart))
	}
	if t.Warm != nil {
		env = append(env, jsonEnv(wire.WarmEnv, t.Warm))
	}
	return env
}

// jsonEnv is the environment entry name=JSON of v.
func jsonEnv(name string, v any) string {
	spec, _ := json.Marshal(v) // plain structs of strings and numbers: cannot fail
	return name + "=" + string(spec)
}

// Template is what a sandbox is made from, before it has a job: the image
// and the hard limits, fixed for the sandbox's life.
type Template struct {
	// Image is the runtime image reference.
	Image string
	// Resources bound the sandbox.
	Resources Resources
	// MaxLife bounds the sandbox's whole existence (idle wait included); a
	// sandbox older than that is removed by any server's sweep.
	MaxLife time.Duration
	// Purpose names what the sandbox is for (a language's name, or cold) in labels and logs.
	Purpose string
	// Prestart, if set, is what the agent starts as soon as the sandbox is
	// up, before its job (see languages.Language.Prestart).
	Prestart *wire.Prestart
	// Warm, if set, is the interpreter the agent starts for the job's run
	// stage before the job arrives (see languages.Language.Warm).
	Warm *wire.Warm
	// Egress, if set, is the sandbox's only way out: the backend serves it
	// on a listener of that sandbox alone, which the sandbox's agent relays
	// to from wire.EgressListen. Without it the sandbox has no network. A
	// backend that cannot do this refuses the template (ErrUnsupported).
	Egress Egress
	// Mounts are host directories shown in the sandbox, read-only unless
	// Writable; a backend that cannot mount host directories refuses the
	// template (ErrUnsupported).
	Mounts []Mount
	// Isolation is what stands between the sandbox's programs and the
	// host's kernel; "" is IsolationContainer. A backend that cannot make
	// it refuses the template (ErrUnsupported; see IsolationSupport).
	Isolation Isolation
	// ReattachGrace, above zero, asks for a sandbox that outlives its
	// server's connection (a session's): its agent keeps its state and
	// waits this long for a server to re-attach (Reattacher). A backend
	// that cannot re-attach ignores it.
	ReattachGrace time.Duration
	// Instance names the server, within its process, that the sandbox is
	// made for: several servers may share a process and a backend (bench,
	// tests), and a server's shutdown removes its own sandboxes only
	// (RemoveOwn). "" is an engine that no server runs (a one-shot
	// command's).
	Instance string
}

// Ref is what a server that did not create a sandbox needs to re-attach to
// it, as the state store keeps it (a session's record).
type Ref struct {
	// ID is the backend's name of the sandbox (the container's ID).
	ID string `json:"id"`
	// SocketDir is the host directory the sandbox sees its agent's socket
	// in.
	SocketDir string `json:"socket_dir,omitempty"`
}

// Keep is what a backend's sweep keeps of the sandboxes of servers that
// are gone (SetKeep): the live sessions' sandboxes, which a server on
// the same state store re-attaches to.
type Keep struct {
	// Store identifies the state store (store.ID). The backend marks
	// each sandbox made with a ReattachGrace with it, and a sweep on
	// another store (or on none) leaves such a sandbox of a server that is
	// gone while it runs (its agent waits for a server to re-attach to
	// it) and its life lasts: only the store that records it can tell whether
	// a session still owns it, and servers on different stores share one
	// host's Docker daemon or crun state.
	Store string
	// Sandboxes lists the sandboxes the store's live sessions own.
	Sandboxes func(context.Context) ([]Ref, error)
}

// Reattacher is a Backend that can take over a sandbox another server
// (this one before a restart) created with a ReattachGrace.
type Reattacher interface {
	// RefOf returns what re-attaching to sb needs, or false when sb cannot
	// be re-attached to (its agent serves the attached streams, or it was
	// created without a ReattachGrace).
	RefOf(sb Sandbox) (Ref, bool)
	// Reattach waits for the agent of the sandbox ref names to connect to
	// this server, checks that the connection comes from that agent and
	// nothing else in or out of the sandbox, and returns the sandbox, now
	// this server's: its Close removes it, and this server's sweep keeps
	// it.
	Reattach(ctx context.Context, ref Ref) (Sandbox, error)
	// Remove removes the sandbox ref names, for one that cannot be
	// re-attached to.
	Remove(ctx context.Context, ref Ref)
}

// Checkpointer is a Backend that can write a session's sandbox, the memory
// of its processes and its files, to a directory and bring it back later,
// in this server or the next (CRIU).
type Checkpointer interface {
	// CheckpointSupport says whether checkpoints work here, or why not.
	CheckpointSupport() error
	// Checkpoint writes sb, a sandbox made from a template with a
	// ReattachGrace and without Egress, to dir and removes it. After an
	// error sb is of no use and the caller closes it.
	Checkpoint(ctx context.Context, sb Sandbox, dir string) error
	// Restore brings back the sandbox checkpointed to dir, as a sandbox of
	// t: the same processes, memory and files, t's image, mounts and life.
	// verify, when not nil, says whether the checkpoint may be restored;
	// Restore prepares and restores the sandbox while it runs, returns it
	// only once verify has said yes, and removes it when verify says no.
	// dir is the server's own (its data directory, 0700): what a restore
	// reads before the answer is what the sandbox wrote before its pause.
	Restore(ctx context.Context, t Template, dir string, verify func() error) (Sandbox, error)
}

// Egress serves one sandbox's connections to the outside (egress.Proxy).
type Egress interface {
	// Serve accepts connections on ln until ln is closed.
	Serve(ln net.Listener) error
}

// Mount is a host directory shown in a sandbox.
type Mount struct {
	Source   string
	Target   string
	Writable bool
}

// ErrUnsupported wraps errors about a template a backend cannot make (for
// example network access on a backend without a local socket).
var ErrUnsupported = errors.New("not supported by this sandbox backend")

// Job is the one request a sandbox runs.
type Job struct {
	// Request is what the agent runs.
	Request wire.Request
	// Deadline bounds the job from the moment it is sent; past it the
	// sandbox is killed and the result says so.
	Deadline time.Duration
	// RunID names the run in logs.
	RunID string
	// Tools, if set, makes the tool calls the job's programs send through
	// the agent (code mode; Request.Tools lets them); without it every
	// call is refused.
	Tools ToolCaller
}

// ToolCaller makes the tool calls of a job's programs: it answers each,
// an error in the answer when the call cannot be made.
type ToolCaller interface {
	CallTool(ctx context.Context, runID string, call wire.ToolCall) wire.ToolResult
}

// Sandbox is a started sandbox whose agent waits for its job. Every backend
// makes its sandboxes with agentconn.New from a byte stream to the agent,
// so every sandbox can serve a session (Call) as well as one job (Exec).
type Sandbox interface {
	// ID names the sandbox (its container, pod or VM).
	ID() string
	// Ready waits until the sandbox's agent, and what the sandbox starts
	// ahead of its job (a warm interpreter), are ready for a job. A pool
	// calls it before it counts the sandbox idle; a job sent without it is
	// served once the agent is ready. After an error the sandbox is of no
	// use and is closed.
	Ready(ctx context.Context) error
	// Exec sends job to the agent and returns what it produced. A sandbox
	// runs exactly one job this way; a second Exec fails (ErrUsed). Output
	// received before a failure is kept in the result.
	Exec(ctx context.Context, job Job, onChunk func(Chunk)) (*Result, error)
	// Call runs one job of a session and leaves the sandbox ready for the
	// next, keeping its workspace and processes. A caller that goes away
	// cancels the job, not the sandbox.
	Call(ctx context.Context, job Job, onChunk func(Chunk)) (*Result, error)
	// Ended is closed when the sandbox has ended: for an idle sandbox, that
	// it died before it got a job.
	Ended() <-chan struct{}
	// Close removes the sandbox; it is safe to call more than once.
	Close()
}

// MemoryReader is a sandbox whose backend reads its memory use cheaply
// from the host (its cgroup's files), for the operator console.
type MemoryReader interface {
	// MemoryUsage is the memory the sandbox uses now, in bytes; ok is
	// false when it cannot be read from here (a remote daemon, a pod).
	MemoryUsage() (bytes uint64, ok bool)
}

// MemoryUsage is sb's memory use now, where its backend can read it
// (MemoryReader); ok is false where it cannot.
func MemoryUsage(sb Sandbox) (bytes uint64, ok bool) {
	if m, is := sb.(MemoryReader); is {
		return m.MemoryUsage()
	}
	return 0, false
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
	wire.StageResult
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
	// Artifacts are the files the run created or changed, when asked for.
	Artifacts []wire.Artifact
	// Elapsed is the time from sending the job to its end.
	Elapsed time.Duration
}

// Backend makes sandboxes. A backend starts the agent in each sandbox and
// gives agentconn a byte stream to it; its errors wrap ErrImageMissing or
// ErrUnavailable where they apply and say what to do.
type Backend interface {
	// Create starts a new sandbox from t, hardened, its agent waiting for a
	// job. The caller must Close it.
	Create(ctx context.Context, t Template) (Sandbox, error)
	// Check reports whether the backend can run sandboxes at all.
	Check(ctx context.Context) error
	// CheckImage reports whether image is present, with what to do if not.
	CheckImage(ctx context.Context, image string) error
	// Architecture is the machine architecture of the sandboxes (Go's
	// name: "amd64", "arm64"), or "" when the backend cannot tell; a
	// language whose runtime exists for other architectures only is then
	// listed as unavailable.
	Architecture(ctx context.Context) string
	// Sweep removes sandboxes that a dead server left behind.
	Sweep(ctx context.Context) (removed int, err error)
	// RemoveOwn removes every sandbox this process made for instance
	// (their templates' Instance); it is for a server's shutdown, after
	// its runs in flight have ended. The sandboxes of the process's other
	// servers stay, and so do those it re-attached to: their sessions
	// remove them.
	RemoveOwn(ctx context.Context, instance string) (removed int, err error)
	// Close releases the backend's resources.
	Close() error
}

// ErrImageMissing wraps errors about a runtime image that is not present.
var ErrImageMissing = errors.New("runtime image missing")

// ErrUnavailable wraps errors about a backend that cannot be reached; the
// backend's message says how to make it reachable.
var ErrUnavailable = errors.New("sandbox backend unavailable")

// ErrUsed is returned by Exec on a sandbox that already ran a job.
var ErrUsed = errors.New("sandbox already ran a job; sandboxes are never reused")

// ErrDead is returned by Exec on a sandbox that ended while idle, before
// its job reached it: nothing ran, and the job may go to another sandbox.
var ErrDead = errors.New("sandbox ended before it got its job")

// RunOnce creates a sandbox from t, runs job in it and removes it before
// returning, whatever happens: the cold path.
func RunOnce(ctx context.Context, b Backend, t Template, job Job, onChunk func(Chunk)) (*Result, error) {
	sb, err := b.Create(ctx, t)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	return sb.Exec(ctx, job, onChunk)
}
