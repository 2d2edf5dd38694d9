package sessions

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Checkpoints: where the backend can (sandbox.Checkpointer: the crun
// backend with CRIU), a pause also checkpoints the session's sandbox, the
// memory of its processes and its files, and the resume restores it
// exactly, in about the time a sandbox takes to start, with nothing run
// again. The archive of the files and the replay log are kept as well, so
// a restore that fails (the checkpoint refused, or the agent binary
// changed since) replays instead, as on a host without CRIU.

// ModeRestored says a paused session's sandbox came back from its
// checkpoint: its processes' memory and its files exactly.
const ModeRestored = "restored"

// checkpointsDir is where paused sessions' checkpoints live, under the
// data directory; each is the server's alone (0700), as it is the memory
// of a sandbox.
const checkpointsDir = "checkpoints"

// checkpointPath is session id's checkpoint directory.
func (m *Manager) checkpointPath(id string) (string, error) {
	dir, err := store.DataDir(m.eng.Config())
	if err != nil {
		return "", err
	}
	base := filepath.Join(dir, checkpointsDir)
	if err := os.MkdirAll(base, 0o700); err != nil {
		return "", err
	}
	return filepath.Join(base, id), nil
}

// checkpointer is the backend's, when it can checkpoint here.
func (m *Manager) checkpointer() (sandbox.Checkpointer, bool) {
	c, ok := m.eng.Backend().(sandbox.Checkpointer)
	if !ok || c.CheckpointSupport() != nil {
		return nil, false
	}
	return c, true
}

// checkpoint checkpoints sb, session id's sandbox, and says whether it
// did; sb is gone then. It does not for a sandbox shared with forks made
// in place, or with network access, packages or secrets (outside the
// sandbox: a proxy and a packages directory), nor where the backend
// cannot; sb is then left for the caller to close.
func (m *Manager) checkpoint(ctx context.Context, id string, sb sandbox.Sandbox, x *extras) bool {
	c, ok := m.checkpointer()
	if !ok {
		return false
	}
	x.mu.Lock()
	withPackages := len(x.specs) > 0
	x.mu.Unlock()
	if _, shared := sb.(*sharedSandbox); shared || x.proxy != nil || withPackages || len(x.secrets) > 0 {
		return false
	}
	dir, err := m.checkpointPath(id)
	if err == nil {
		_ = os.RemoveAll(dir) // one a crash left
		err = c.Checkpoint(ctx, sb, dir)
	}
	if err != nil {
		m.log.Warn("a paused session's sandbox was not checkpointed; its resume replays its cells", "session", id, "err", err)
		m.removeCheckpoint(id)
		return false
	}
	return true
}

// restore brings back paused session s from its checkpoint and says
// whether it did; the caller holds s.callMu and replays when it did not.
func (m *Manager) restore(ctx context.Context, s *session, start time.Time) bool {
	defer m.removeCheckpoint(s.id)
	s.mu.Lock()
	s.checkpointed = false
	x := s.extras
	s.mu.Unlock()
	c, ok := m.checkpointer()
	dir, err := m.checkpointPath(s.id)
	if !ok || err != nil {
		m.log.Warn("a paused session's checkpoint cannot be restored here; it is replayed", "session", s.id, "err", err)
		return false
	}
	t, nx, err := m.template(ctx, s.owner, s.lang, Options{Network: x.tier, Packages: x.specs, Secrets: x.secrets}, s.idle, 0)
	if err != nil {
		m.log.Warn("a paused session's checkpoint was not restored; it is replayed", "session", s.id, "err", err)
		return false
	}
	sb, err := c.Restore(ctx, t, dir)
	if err != nil {
		nx.close()
		m.log.Warn("a paused session's checkpoint was not restored; it is replayed", "session", s.id, "err", err)
		return false
	}
	s.mu.Lock()
	s.sb, s.extras = sb, nx
	s.paused, s.archiveSum, s.lost = false, "", ""
	if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok {
		s.ref, s.reattach = ra.RefOf(sb)
	}
	s.resumed = &engine.Resumed{Mode: ModeRestored, Cause: engine.ResumedPaused, DurationMs: time.Since(start).Milliseconds()}
	s.mu.Unlock()
	if path, err := m.archivePath(s.id); err == nil {
		_ = os.Remove(path)
	}
	if err := m.put(ctx, s); err != nil {
		m.log.Warn("a resumed session's record was not written to the state store", "session", s.id, "err", err)
	}
	return true
}

// removeCheckpoint removes session id's checkpoint, if any.
func (m *Manager) removeCheckpoint(id string) {
	if dir, err := m.checkpointPath(id); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			m.log.Warn("a session's checkpoint was not removed", "session", id, "err", err)
		}
	}
}
