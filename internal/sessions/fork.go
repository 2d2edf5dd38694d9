package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// ModeReplayed says a session's interpreter state was rebuilt in a new
// sandbox by running the session's cells again, in order.
const ModeReplayed = "replayed"

// maxCopyFileBytes bounds one workspace file that a fork copies: it
// travels in one frame of the agent's protocol, base64-encoded.
const maxCopyFileBytes = 32 << 20

// cell is one entry of a session's replay log: code that ran in its
// interpreter and succeeded.
type cell struct {
	Code           string     `json:"code"`
	Env            engine.Env `json:"env,omitempty"`
	TimeoutSeconds int        `json:"timeout_seconds,omitempty"`
}

// size is what c counts against sessions.replay_max_bytes.
func (c cell) size() int {
	n := len(c.Code)
	for k, v := range c.Env {
		n += len(k) + len(v)
	}
	return n
}

// replayLog is the cells of a session, in order, within the operator's
// bounds (sessions.replay_max_cells, replay_max_bytes); past them it is
// dropped and Overflow says why the state can no longer be replayed.
type replayLog struct {
	Cells    []cell `json:"cells,omitempty"`
	Bytes    int    `json:"bytes,omitempty"`
	Overflow string `json:"overflow,omitempty"`
}

// logCell appends a call that succeeded to s's replay log, and writes the
// log to the session's record at once (in the background): a server that
// replaces this one after a crash replays it when the sandbox is lost.
// Only calls that ran in the interpreter change its state: a language
// without a kernel, or a call with stdin or arguments (a process of its
// own), adds nothing.
func (m *Manager) logCell(s *session, req engine.Request) {
	if s.lang.Kernel == nil || req.Stdin != "" || len(req.Args) > 0 {
		return
	}
	defer m.write(s, true)
	c := cell{Code: req.Code, Env: req.Env, TimeoutSeconds: req.TimeoutSeconds}
	size := c.size()
	s.mu.Lock()
	defer s.mu.Unlock()
	r := &s.replay
	switch {
	case r.Overflow != "":
	case len(r.Cells)+1 > m.cfg.ReplayMaxCells:
		*r = replayLog{Overflow: fmt.Sprintf("it ran more than %d cells (sessions.replay_max_cells)", m.cfg.ReplayMaxCells)}
	case r.Bytes+size > m.cfg.ReplayMaxBytes:
		*r = replayLog{Overflow: fmt.Sprintf("its cells hold more than %d bytes of code (sessions.replay_max_bytes)", m.cfg.ReplayMaxBytes)}
	default:
		r.Cells = append(r.Cells, c)
		r.Bytes += size
	}
}

// ForkResult is fork_session's result.
type ForkResult struct {
	Session       Info     `json:"session" jsonschema:"the new session"`
	ForkedFrom    string   `json:"forked_from" jsonschema:"the session it was forked from, which is unchanged"`
	Mode          string   `json:"mode" jsonschema:"how the interpreter state was copied: forked (the interpreter copied by fork() inside the original's sandbox: its state exactly; see shares_sandbox) or replayed (the original's cells run again in order in a new sandbox)"`
	CellsReplayed int      `json:"cells_replayed" jsonschema:"cells run again to rebuild the state"`
	FilesCopied   int      `json:"files_copied" jsonschema:"regular files of the workspace copied into the new session"`
	Skipped       []string `json:"skipped,omitempty" jsonschema:"workspace entries not copied (symbolic links, special files), with why"`
	DurationMs    int64    `json:"duration_ms" jsonschema:"how long the fork took"`
	// SharesSandbox is set for a fork made in place (mode forked).
	SharesSandbox *SharedSandbox `json:"shares_sandbox,omitempty" jsonschema:"a fork made in place: the sandbox and limits it shares with the original"`
}

// snapshot is what a new sandbox needs to take a session's place: its
// workspace's regular files and its replay log.
type snapshot struct {
	files   []wire.File
	skipped []string
	cells   []cell
}

// takeSnapshot reads s's workspace and replay log; the caller holds
// s.callMu.
func (m *Manager) takeSnapshot(ctx context.Context, s *session, what string) (*snapshot, error) {
	s.mu.Lock()
	r := s.replay
	s.mu.Unlock()
	if r.Overflow != "" {
		return nil, invalid("session %s cannot be %s: its interpreter state cannot be replayed because %s; create a new session, or ask the operator to raise the bound", s.id, what, r.Overflow)
	}
	snap := &snapshot{cells: append([]cell(nil), r.Cells...)}
	call := func(req wire.Request) (*sandbox.Result, error) {
		req.Workdir, req.Session = wire.WorkspacePath, true
		res, err := s.sb.Call(ctx, sandbox.Job{Request: req, Deadline: time.Minute, RunID: "snapshot-" + s.id}, nil)
		switch {
		case err != nil:
			return nil, err
		case res.AgentError != "":
			return nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("reading session %s's workspace: %s", s.id, res.AgentError)}
		case res.Incomplete:
			return nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("session %s's sandbox did not answer; it may have ended", s.id)}
		}
		return res, nil
	}
	list, err := call(wire.Request{Op: wire.OpListFiles})
	if err != nil {
		return nil, err
	}
	for _, a := range list.Artifacts {
		switch {
		case a.Type == "dir":
			continue
		case a.Type != "file":
			snap.skipped = append(snap.skipped, a.Path+" ("+a.Type+", not copied)")
			continue
		case a.Size > maxCopyFileBytes:
			return nil, invalid("session %s cannot be %s: its file %s is %d bytes, above the %d a copy of its workspace takes; remove or shrink it first", s.id, what, a.Path, a.Size, maxCopyFileBytes)
		}
		res, err := call(wire.Request{Op: wire.OpReadFile, Path: a.Path, MaxReadBytes: maxCopyFileBytes})
		if err != nil {
			return nil, err
		}
		if len(res.Artifacts) != 1 {
			return nil, &engine.Error{Code: engine.CodeInternal, Message: fmt.Sprintf("session %s's file %s could not be read", s.id, a.Path)}
		}
		snap.files = append(snap.files, wire.File{Path: a.Path, Data: res.Artifacts[0].Data})
	}
	return snap, nil
}

// restore writes snap's files into sb's workspace, in batches that fit
// the agent's frames.
func restoreFiles(ctx context.Context, sb sandbox.Sandbox, files []wire.File, runID string) error {
	for len(files) > 0 {
		n, size := 0, 0
		for n < len(files) && (n == 0 || size+len(files[n].Data) <= maxCopyFileBytes) {
			size += len(files[n].Data)
			n++
		}
		res, err := sb.Call(ctx, sandbox.Job{Request: wire.Request{Op: wire.OpWriteFile, Workdir: wire.WorkspacePath, Session: true, Files: files[:n]},
			Deadline: time.Minute, RunID: runID}, nil)
		switch {
		case err != nil:
			return err
		case res.AgentError != "":
			return &engine.Error{Code: engine.CodeInternal, Message: "writing the workspace's files into the new sandbox: " + res.AgentError}
		case res.Incomplete:
			return &engine.Error{Code: engine.CodeInternal, Message: "the new sandbox did not answer while its files were written"}
		}
		files = files[n:]
	}
	return nil
}

// rebuild brings s's new sandbox to snap's state: the files, then the
// cells replayed in order (they may read those files), then the files
// again, so that what the replay wrote gives way to what the original
// holds.
func (m *Manager) rebuild(ctx context.Context, s *session, snap *snapshot) error {
	if err := restoreFiles(ctx, s.sb, snap.files, "restore-"+s.id); err != nil {
		return err
	}
	for i, c := range snap.cells {
		req := engine.Request{SessionID: s.id, Language: s.lang.Name, Code: c.Code, Env: c.Env, TimeoutSeconds: c.TimeoutSeconds}
		plan, err := m.eng.PrepareInSession(ctx, req, s.lang, s.extras.secrets)
		if err != nil {
			return fmt.Errorf("replaying cell %d of %d: %w", i+1, len(snap.cells), err)
		}
		// A cell that called tools calls them again: its state is rebuilt
		// as it was made.
		plan.Tools = s.extras.tools
		res, err := m.eng.RunOn(ctx, s.sb, plan, engine.RunOptions{Env: s.extras.env, Proxy: s.extras.proxy, Files: s.extras.files})
		if err != nil {
			return fmt.Errorf("replaying cell %d of %d: %w", i+1, len(snap.cells), err)
		}
		if res.Status != engine.StatusOK {
			return invalid("replaying cell %d of %d ended %s, though it succeeded the first time (it depends on something outside the session, like time, randomness or the network): %s",
				i+1, len(snap.cells), res.Status, tail(res.Stderr, 400))
		}
	}
	r := replayLog{Cells: snap.cells}
	for _, c := range snap.cells {
		r.Bytes += c.size()
	}
	s.mu.Lock()
	s.replay = r
	s.mu.Unlock()
	return restoreFiles(ctx, s.sb, snap.files, "restore-"+s.id)
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) > n {
		s = "…" + s[len(s)-n:]
	}
	return s
}

// Fork starts a new session of ctx's principal from one of its own: the
// same language, idle timeout, network and packages, a sandbox of its own
// with a copy of the workspace's files, and the interpreter's state rebuilt
// by replaying the original's cells. The original is not changed; it
// waits while its files are read.
func (m *Manager) Fork(ctx context.Context, id string) (ForkResult, error) {
	start := time.Now()
	s, err := m.get(ctx, id)
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		// The replica holding the sandbox forks it, and holds the fork.
		var out ForkResult
		err := m.forwardTo(ctx, held, opFork, forwardArgs{}, nil, &out)
		return out, err
	}
	if err != nil {
		return ForkResult{}, err
	}
	if k := s.lang.Kernel; k != nil && k.Fork {
		if res, ok, err := m.forkInPlace(ctx, s, start); ok {
			return res, err
		}
	}
	s.callMu.Lock()
	snap, err := m.takeSnapshot(ctx, s, "forked")
	s.callMu.Unlock()
	m.touch(s)
	if err != nil {
		return ForkResult{}, err
	}
	owner := principal.FromContext(ctx).Name
	if err := m.reserve(owner); err != nil {
		return ForkResult{}, err
	}
	defer m.unreserve(owner)
	x := s.extras
	x.mu.Lock()
	specs := append([]string(nil), x.specs...)
	x.mu.Unlock()
	sb, extras, err := m.start(ctx, s.owner, s.lang, Options{Network: x.tier, Packages: specs, Secrets: x.secrets, Isolation: string(x.isolation), Tools: x.tools}, s.idle)
	if err != nil {
		return ForkResult{}, err
	}
	now := time.Now()
	f := &session{id: newID(), owner: s.owner, lang: s.lang, sb: sb, extras: extras, created: now, lastUsed: now, idle: s.idle, lastWrite: now}
	if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok {
		f.ref, f.reattach = ra.RefOf(sb)
	}
	if err := m.rebuild(ctx, f, snap); err != nil {
		sb.Close()
		extras.close()
		return ForkResult{}, err
	}
	if err := m.put(ctx, f); err != nil {
		sb.Close()
		extras.close()
		return ForkResult{}, &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("the new session could not be written to the state store (%v); try again once the store answers", err)}
	}
	m.mu.Lock()
	m.sessions[f.id] = f
	m.mu.Unlock()
	return ForkResult{Session: m.info(f), ForkedFrom: s.id, Mode: ModeReplayed, CellsReplayed: len(snap.cells),
		FilesCopied: len(snap.files), Skipped: snap.skipped, DurationMs: time.Since(start).Milliseconds()}, nil
}
