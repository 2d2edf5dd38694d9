package sessions

import (
	"context"
	"errors"
	"path"
	"strconv"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// ModeForked is a fork whose interpreter was copied by fork() inside the
// original's sandbox: its live state exactly, its memory shared
// copy-on-write.
const ModeForked = "forked"

// SharedSandbox tells a fork made in place what it shares.
type SharedSandbox struct {
	With      string `json:"with" jsonschema:"the session whose sandbox the fork runs in"`
	MemoryMB  int    `json:"memory_mb" jsonschema:"the sandbox's memory limit, which the sessions sharing it use together"`
	PidsLimit int    `json:"pids_limit" jsonschema:"the sandbox's process limit, which the sessions sharing it use together"`
	Note      string `json:"note" jsonschema:"what sharing means"`
}

// sandboxShare is what the sessions sharing one sandbox (a session and
// its forks made in place) hold in common.
type sandboxShare struct {
	callMu sync.Mutex // one call in the sandbox at a time: its agent serves one
	mu     sync.Mutex
	users  int
	x      *extras // the network and packages of the first session, which all use
}

// sharedSandbox is one session's view of a shared sandbox: its calls go
// to its own interpreter (instance) and workspace directory, and closing
// it ends only those, until the last session closes the sandbox.
type sharedSandbox struct {
	sandbox.Sandbox
	share    *sandboxShare
	kernel   string // the kernel program's name
	instance string // "" for the session that made the sandbox
	workdir  string
}

// MemoryUsage is the shared sandbox's, all its sessions' together
// ([sandbox.MemoryReader]).
func (s *sharedSandbox) MemoryUsage() (bytes uint64, ok bool) { return sandbox.MemoryUsage(s.Sandbox) }

func (s *sharedSandbox) Call(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	r := job.Request
	if r.Workdir == wire.WorkspacePath {
		r.Workdir = s.workdir
	}
	if r.Kernel != nil {
		k := *r.Kernel
		k.Instance = s.instance
		r.Kernel = &k
	}
	job.Request = r
	s.share.callMu.Lock()
	defer s.share.callMu.Unlock()
	return s.Sandbox.Call(ctx, job, onChunk)
}

// Close ends this session's interpreter and, for a fork, its workspace;
// the last session sharing the sandbox removes it, with its network and
// packages.
func (s *sharedSandbox) Close() {
	s.share.mu.Lock()
	s.share.users--
	last := s.share.users == 0
	s.share.mu.Unlock()
	if last {
		s.Sandbox.Close()
		s.share.x.close()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req := wire.Request{Op: wire.OpKernelClose, Workdir: s.workdir, Session: true, Kernel: &wire.KernelCall{Name: s.kernel, Instance: s.instance}}
	s.share.callMu.Lock()
	defer s.share.callMu.Unlock()
	_, _ = s.Sandbox.Call(ctx, sandbox.Job{Request: req, Deadline: time.Minute, RunID: "kernel-close"}, nil)
}

// closeSandbox removes a session's sandbox and its network and packages,
// or, for a sandbox it shares, its own part of it.
func closeSandbox(sb sandbox.Sandbox, x *extras) {
	sb.Close()
	if _, shared := sb.(*sharedSandbox); !shared {
		x.close()
	}
}

// forkInPlace forks s by copying its interpreter inside its sandbox, for
// a language whose kernel can (languages.Kernel.Fork). ok is false when it
// cannot now (the interpreter ran nothing yet, or fork() failed, as with a
// full pids limit): the caller then replays s's cells in a new sandbox.
func (m *Manager) forkInPlace(ctx context.Context, s *session, start time.Time) (res ForkResult, ok bool, err error) {
	owner := principal.FromContext(ctx).Name
	if err := m.reserve(owner); err != nil {
		return ForkResult{}, true, err
	}
	defer m.unreserve(owner)
	s.callMu.Lock()
	defer s.callMu.Unlock()
	shared := m.share(s)
	now := time.Now()
	f := &session{id: newID(), owner: s.owner, lang: s.lang, extras: shared.share.x, created: now, lastUsed: now, idle: s.idle, lastWrite: now, forkOf: s.id}
	workdir := path.Join(wire.WorkspacePath, wire.ForksDir, f.id)
	req := wire.Request{Op: wire.OpKernelFork, Workdir: workdir, Session: true,
		Kernel: &wire.KernelCall{Name: s.lang.Kernel.Name}, Fork: &wire.KernelFork{Instance: f.id}}
	out, err := shared.Call(ctx, sandbox.Job{Request: req, Deadline: time.Minute, RunID: "fork-" + s.id}, nil)
	switch {
	case err != nil:
		return ForkResult{}, true, err
	case out.AgentError != "" || len(out.Stages) == 0:
		why := out.AgentError
		if why != wire.ErrNoKernel {
			m.log.Warn("a fork in the session's sandbox failed; it is replayed in a new sandbox", "session", s.id, "err", why)
		}
		return ForkResult{}, false, nil
	}
	shared.share.mu.Lock()
	shared.share.users++
	shared.share.mu.Unlock()
	f.sb = &sharedSandbox{Sandbox: shared.Sandbox, share: shared.share, kernel: s.lang.Kernel.Name, instance: f.id, workdir: workdir}
	s.mu.Lock()
	f.replay = replayLog{Cells: append([]cell(nil), s.replay.Cells...), Bytes: s.replay.Bytes, Overflow: s.replay.Overflow}
	f.ref = s.ref
	s.mu.Unlock()
	if err := m.put(ctx, f); err != nil {
		f.sb.Close()
		return ForkResult{}, true, errors.Join(errors.New("the new session could not be written to the state store; try again once the store answers"), err)
	}
	m.mu.Lock()
	m.sessions[f.id] = f
	m.mu.Unlock()
	limits := m.eng.Template(s.lang).Resources
	pid, _ := strconv.Atoi(out.Stages[0].Value)
	m.log.Info("forked a session in its sandbox", "session", s.id, "fork", f.id, "pid", pid)
	return ForkResult{Session: m.info(f), ForkedFrom: s.id, Mode: ModeForked, FilesCopied: int(out.Stages[0].StdoutBytes),
		DurationMs: time.Since(start).Milliseconds(),
		SharesSandbox: &SharedSandbox{With: s.id, MemoryMB: limits.MemoryMB, PidsLimit: limits.PidsLimit,
			Note: "the fork's interpreter is a copy of the original's (fork(): its memory shared copy-on-write) in the original's sandbox, so their memory and processes count against these limits together; the fork has its own copy of the workspace's files, as its working directory, under .mcr-forks/ of the original's, where absolute /workspace paths still reach the original's files; pausing either gives up its own interpreter and part, and its resume replays its cells in a sandbox of its own"}}, true, nil
}

// share makes s's sandbox one that forks can share, if it is not yet.
func (m *Manager) share(s *session) *sharedSandbox {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sh, ok := s.sb.(*sharedSandbox); ok {
		return sh
	}
	sh := &sharedSandbox{Sandbox: s.sb, share: &sandboxShare{users: 1, x: s.extras}, kernel: s.lang.Kernel.Name, workdir: wire.WorkspacePath}
	s.sb = sh
	return sh
}
