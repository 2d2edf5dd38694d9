// Package fake is a [sandbox.Backend] for logic tests that need no Docker:
// each sandbox is the real agent (agent.Serve) running in this process
// over a pair of pipes, driven by the real host half of the protocol
// (agentconn), with a temporary directory of the host as its workspace.
// Its stages are real processes on the host. Only the making of sandboxes
// and the byte stream are fake; a test can count them, make Create fail or
// wait, kill an idle sandbox, and flag a killed one as out of memory.
//
// It isolates nothing: it is for tests of the code around sandboxes (pool,
// engine, sessions, executions), never for running untrusted code.
package fake

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/agent"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox/agentconn"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Backend makes in-process sandboxes. The zero value is not usable; call New.
type Backend struct {
	// CheckErr, if set, is what Check returns. Set it before use.
	CheckErr error
	// MissingImages are the images CheckImage and Create report missing.
	// Set it before use.
	MissingImages map[string]bool
	// Arch is what Architecture reports; empty: this machine's. Set it
	// before use.
	Arch string

	dir string // the workspaces live here

	mu           sync.Mutex
	beforeCreate func(ctx context.Context, t sandbox.Template) error
	beforeAgent  func(id string) error
	seq          int
	live         map[string]*link
	created      int
	removed      int
	changed      chan struct{} // closed and replaced on every create and remove
}

var _ sandbox.Backend = (*Backend)(nil)

// New returns a backend whose workspaces are made under dir (a test's
// t.TempDir()).
func New(dir string) *Backend {
	return &Backend{dir: dir, live: map[string]*link{}, changed: make(chan struct{})}
}

// Create starts the real agent in this process for a new sandbox.
func (b *Backend) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	b.mu.Lock()
	before := b.beforeCreate
	b.mu.Unlock()
	if before != nil {
		if err := before(ctx, t); err != nil {
			return nil, err
		}
	}
	// The image comes first, as with a real engine, whose create fails on a
	// missing image before it looks at the rest.
	if err := b.CheckImage(ctx, t.Image); err != nil {
		return nil, err
	}
	if t.Egress != nil || len(t.Mounts) > 0 {
		return nil, fmt.Errorf("%w: the fake backend runs its agent in this process, with no network of its own and no mounts", sandbox.ErrUnsupported)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	b.mu.Lock()
	b.seq++
	id := "fake-" + strconv.Itoa(b.seq)
	b.mu.Unlock()
	workspace := filepath.Join(b.dir, id)
	if err := os.Mkdir(workspace, 0o755); err != nil {
		return nil, err
	}
	b.mu.Lock()
	beforeAgent := b.beforeAgent
	b.mu.Unlock()
	l, err := startLink(workspace, id, beforeAgent)
	if err != nil {
		return nil, err
	}
	l.onClose = func() { b.forget(id) }
	l.instance = t.Instance
	b.mu.Lock()
	b.live[id] = l
	b.created++
	b.notify()
	b.mu.Unlock()
	return agentconn.New(id, l, nil), nil
}

// SetBeforeCreate makes fn run at the start of every Create from now on
// (nil: none). An error it returns is Create's (wrap [sandbox.ErrImageMissing]
// or [sandbox.ErrUnavailable] to play those); it may block to make creation
// slow, and should then honour ctx.
func (b *Backend) SetBeforeCreate(fn func(ctx context.Context, t sandbox.Template) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.beforeCreate = fn
}

// SetBeforeAgent makes fn run in every sandbox created from now on before
// its agent starts (nil: none), as a container's boot does: it may block to
// make the boot slow (Create has returned by then), and an error it returns
// ends the sandbox before its agent serves, as an agent that fails at boot.
func (b *Backend) SetBeforeAgent(fn func(id string) error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.beforeAgent = fn
}

// forget counts the removal of sandbox id.
func (b *Backend) forget(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, ok := b.live[id]; ok {
		delete(b.live, id)
		b.removed++
		b.notify()
	}
}

// notify wakes Changed's waiters; b.mu is held.
func (b *Backend) notify() {
	close(b.changed)
	b.changed = make(chan struct{})
}

// Counts returns how many sandboxes were created, removed, and are live.
func (b *Backend) Counts() (created, removed, live int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.created, b.removed, len(b.live)
}

// Changed is closed at the next create or remove, for tests that wait for one.
func (b *Backend) Changed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.changed
}

// Live returns the IDs of the sandboxes not yet removed.
func (b *Backend) Live() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var ids []string
	for id := range b.live {
		ids = append(ids, id)
	}
	return ids
}

// Workspace returns the host directory that is sandbox id's workspace
// ([wire.WorkspacePath] inside it), or "" when id is not live.
func (b *Backend) Workspace(id string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if l := b.live[id]; l != nil {
		return l.workspace
	}
	return ""
}

// Kill ends sandbox id from outside, as a container killed by someone
// else: its agent's stream closes and its processes are killed. With oom,
// the sandbox reports that it hit its memory limit. It reports whether id
// was live.
func (b *Backend) Kill(id string, oom bool) bool {
	b.mu.Lock()
	l := b.live[id]
	b.mu.Unlock()
	if l == nil {
		return false
	}
	if oom {
		l.mu.Lock()
		l.oom = true
		l.mu.Unlock()
	}
	l.Kill(context.Background())
	return true
}

// Sever closes the stream into sandbox id while the sandbox stays up (its
// Ended stays open): a sandbox whose agent died a moment before its backend
// noticed. A job sent to it cannot be delivered. It reports whether id was
// live.
func (b *Backend) Sever(id string) bool {
	b.mu.Lock()
	l := b.live[id]
	b.mu.Unlock()
	if l == nil {
		return false
	}
	l.mu.Lock()
	l.severed = true
	l.mu.Unlock()
	l.hostIn.Close()
	return true
}

// Check returns CheckErr.
func (b *Backend) Check(context.Context) error { return b.CheckErr }

// CheckImage reports the images of MissingImages missing.
func (b *Backend) CheckImage(_ context.Context, image string) error {
	if b.MissingImages[image] {
		return fmt.Errorf("%w: image %s is not present (this is the fake backend)", sandbox.ErrImageMissing, image)
	}
	return nil
}

// Architecture returns Arch, or this machine's architecture without it.
func (b *Backend) Architecture(context.Context) string {
	if b.Arch != "" {
		return b.Arch
	}
	return runtime.GOARCH
}

// Sweep removes nothing: no other server shares this backend.
func (b *Backend) Sweep(context.Context) (int, error) { return 0, nil }

// RemoveOwn removes every sandbox still live that was made for instance.
func (b *Backend) RemoveOwn(_ context.Context, instance string) (int, error) {
	return b.removeWhere(func(l *link) bool { return l.instance == instance }), nil
}

// Close removes every sandbox still live.
func (b *Backend) Close() error {
	b.removeWhere(func(*link) bool { return true })
	return nil
}

// removeWhere removes the live sandboxes match selects and returns how
// many.
func (b *Backend) removeWhere(match func(*link) bool) int {
	b.mu.Lock()
	var links []*link
	for _, l := range b.live {
		if match(l) {
			links = append(links, l)
		}
	}
	b.mu.Unlock()
	for _, l := range links {
		l.Close()
	}
	return len(links)
}

// link is one in-process sandbox: the agent serves on agentIn/agentOut,
// and the host's frames pass through translate on their way in.
type link struct {
	workspace string
	instance  string // the template's Instance

	toAgent   *os.File // the host's end of the agent's input (via translate)
	fromAgent *os.File // the host's end of the agent's output
	hostIn    *os.File // translate reads the host's frames here
	agentIn   *os.File // translate writes them to the agent here

	ended   chan struct{}
	diag    agentconn.Diagnostics
	onClose func()

	mu      sync.Mutex
	oom     bool
	cut     bool
	severed bool
	removed bool
}

// startLink starts the agent of sandbox id, whose workspace is workspace,
// after boot (nil: at once).
func startLink(workspace, id string, boot func(id string) error) (*link, error) {
	var files []*os.File
	pipe := func() (r, w *os.File) {
		r, w, err := os.Pipe()
		if err != nil {
			panic(err) // out of descriptors: the test cannot go on
		}
		files = append(files, r, w)
		return r, w
	}
	hostIn, toAgent := pipe()
	agentIn, toAgentInner := pipe()
	fromAgent, agentOut := pipe()
	l := &link{workspace: workspace, toAgent: toAgent, fromAgent: fromAgent, hostIn: hostIn, agentIn: toAgentInner,
		ended: make(chan struct{})}
	go l.translate()
	go func() {
		defer close(l.ended)
		if boot != nil {
			if err := boot(id); err != nil {
				fmt.Fprintf(&l.diag, "boot: %v\n", err)
				agentOut.Close()
				agentIn.Close()
				return
			}
		}
		if err := agent.Serve(agentIn, agentOut); err != nil && !l.wasCut() {
			fmt.Fprintf(&l.diag, "agent: %v\n", err)
		}
		agentOut.Close()
		agentIn.Close()
		l.killProcesses()
	}()
	return l, nil
}

// translate passes the host's frames to the agent, with the contract's
// workspace path ([wire.WorkspacePath]) in each request made this sandbox's
// directory: what a container's mount does for the Docker backend.
func (l *link) translate() {
	for {
		f, err := wire.ReadFrame(l.hostIn)
		if err != nil {
			l.mu.Lock()
			severed := l.severed
			l.mu.Unlock()
			if !severed { // a severed sandbox stays up until killed
				l.agentIn.Close()
			}
			return
		}
		if f.Kind == wire.KindRequest {
			var req map[string]json.RawMessage
			if json.Unmarshal(f.Payload, &req) == nil {
				var dir string
				if json.Unmarshal(req["workdir"], &dir) == nil && (dir == wire.WorkspacePath || strings.HasPrefix(dir, wire.WorkspacePath+"/")) {
					req["workdir"], _ = json.Marshal(l.workspace + strings.TrimPrefix(dir, wire.WorkspacePath))
					f.Payload, _ = json.Marshal(req)
				}
			}
		}
		if err := wire.WriteFrame(l.agentIn, f); err != nil {
			l.agentIn.Close()
			return
		}
	}
}

func (l *link) wasCut() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.cut
}

func (l *link) Stream(context.Context) (agentconn.Stream, error) {
	return agentconn.Stream{Reader: l.fromAgent, Writer: l.toAgent, CloseWrite: l.toAgent.Close}, nil
}

// Kill cuts the agent's stream and kills the sandbox's processes.
func (l *link) Kill(context.Context) {
	l.mu.Lock()
	l.cut = true
	l.mu.Unlock()
	l.toAgent.Close()
	l.hostIn.Close()
	l.agentIn.Close()
	l.fromAgent.Close()
	l.killProcesses()
}

// killProcesses kills every process working in the sandbox's workspace:
// the fake's bound of a sandbox, where a container has its cgroup.
func (l *link) killProcesses() {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		pid, err := strconv.Atoi(p.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cwd, err := os.Readlink("/proc/" + p.Name() + "/cwd")
		if err == nil && (cwd == l.workspace || strings.HasPrefix(cwd, l.workspace+"/")) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

func (l *link) OOMKilled(context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.oom
}

func (l *link) Ended() <-chan struct{} { return l.ended }

func (l *link) Diagnostics() string { return l.diag.String() }

// Close kills the sandbox, waits for its agent to end and removes its
// workspace.
func (l *link) Close() {
	l.mu.Lock()
	if l.removed {
		l.mu.Unlock()
		return
	}
	l.removed = true
	l.mu.Unlock()
	l.Kill(context.Background())
	// The agent may start a stage's process after the kill (it learns of
	// the cut stream only when it next writes); kill again until it ends.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for ended := false; !ended; {
		select {
		case <-l.ended:
			ended = true
		case <-tick.C:
			l.killProcesses()
		}
	}
	_ = os.RemoveAll(l.workspace)
	if l.onClose != nil {
		l.onClose()
	}
}
