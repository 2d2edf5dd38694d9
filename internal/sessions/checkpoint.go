package sessions

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
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
	if m.cfg.CheckpointTools == "off" {
		return nil, false
	}
	c, ok := m.eng.Backend().(sandbox.Checkpointer)
	if !ok || c.CheckpointSupport() != nil {
		return nil, false
	}
	return c, true
}

// checkpointManifest is the file a checkpoint starts with, as an archive
// does (manifestName): whose sandbox it is.
const checkpointManifest = "session.json"

// checkpoint checkpoints sb, session s's sandbox, and returns the
// checkpoint's SHA-256, which its record keeps, or "" when it did not; sb
// is gone when it did. It does not for a sandbox still shared with forks
// made in place, or with network access, packages or secrets (outside the
// sandbox: a proxy and a packages directory), nor where the backend
// cannot; sb is then left for the caller to close.
func (m *Manager) checkpoint(ctx context.Context, s *session, sb sandbox.Sandbox, x *extras) string {
	c, ok := m.checkpointer()
	if !ok {
		return ""
	}
	x.mu.Lock()
	withPackages := len(x.specs) > 0
	x.mu.Unlock()
	// CRIU checkpoints the host kernel's processes; a gVisor sandbox's
	// are gVisor's, so its session replays.
	if x.proxy != nil || withPackages || len(x.secrets) > 0 || x.isolation == sandbox.IsolationGVisor {
		return ""
	}
	// A sandbox that forks made in place share is theirs too; once they
	// are closed, the session that made it has it alone.
	if sh, shared := sb.(*sharedSandbox); shared {
		sh.share.mu.Lock()
		alone := sh.share.users == 1
		sh.share.mu.Unlock()
		if !alone || sh.instance != "" {
			return ""
		}
		sb = sh.Sandbox
	}
	dir, err := m.checkpointPath(s.id)
	if err == nil {
		_ = os.RemoveAll(dir) // one a crash left
		err = c.Checkpoint(ctx, sb, dir)
	}
	var sum string
	if err == nil {
		sum, err = sealCheckpoint(dir, manifest{SessionID: s.id, Owner: s.owner})
	}
	if err != nil {
		m.log.Warn("a paused session's sandbox was not checkpointed; its resume replays its cells", "session", s.id, "err", err)
		m.removeCheckpoint(s.id)
		return ""
	}
	return sum
}

// sealCheckpoint writes the manifest into the checkpoint dir and returns
// the checkpoint's SHA-256.
func sealCheckpoint(dir string, man manifest) (string, error) {
	data, err := json.Marshal(man)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(dir, checkpointManifest), data, 0o600); err != nil {
		return "", err
	}
	return treeSum(dir)
}

// checkCheckpoint refuses a checkpoint that is not sum (changed since the
// pause) or not session s's.
func checkCheckpoint(dir string, s *session, sum string) error {
	got, err := treeSum(dir)
	if err != nil {
		return fmt.Errorf("reading it: %w", err)
	}
	if got != sum {
		return errors.New("it changed since the pause (its SHA-256 is not the one the session's record keeps): corrupted, or replaced")
	}
	var man manifest
	data, err := os.ReadFile(filepath.Join(dir, checkpointManifest)) // under the server's data directory
	if err == nil {
		err = json.Unmarshal(data, &man)
	}
	if err != nil {
		return fmt.Errorf("its manifest: %w", err)
	}
	if man.SessionID != s.id || man.Owner != s.owner {
		return fmt.Errorf("it is session %s's, not this session's", man.SessionID)
	}
	return nil
}

// treeSum is the SHA-256 of the files under dir: their paths, sizes and
// contents, in lexical order.
func treeSum(dir string) (string, error) {
	h := sha256.New()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.IsDir():
			fmt.Fprintf(h, "d %s\x00", rel)
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%s is not a regular file", rel)
		}
		f, err := os.Open(path) // under the server's data directory
		if err != nil {
			return err
		}
		defer f.Close()
		fi, err := f.Stat()
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "f %s %d\x00", rel, fi.Size())
		_, err = io.Copy(h, f)
		return err
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// restore brings back paused session s from its checkpoint, whose SHA-256
// is sum, and returns "" when it did, or why it did not: the caller holds
// s.callMu and replays then, and the result says why.
func (m *Manager) restore(ctx context.Context, s *session, sum string, start time.Time) (refused string) {
	defer m.removeCheckpoint(s.id)
	s.mu.Lock()
	s.checkpointSum = ""
	x := s.extras
	s.mu.Unlock()
	defer func() {
		if refused != "" {
			m.log.Warn("a paused session's checkpoint was not restored; it is replayed", "session", s.id, "why", refused)
		}
	}()
	c, ok := m.checkpointer()
	if !ok {
		return "this server does not restore checkpoints (`mcp-code-runner doctor` says why)"
	}
	dir, err := m.checkpointPath(s.id)
	if err != nil {
		return err.Error()
	}
	t, nx, err := m.template(ctx, s.owner, s.lang, Options{Network: x.tier, Packages: x.specs, Secrets: x.secrets, Isolation: string(x.isolation), Tools: x.tools}, s.idle, 0)
	if err != nil {
		return err.Error()
	}
	// The checkpoint's hash is read while the backend prepares and
	// restores the sandbox; the session gets the sandbox only once the
	// hash and the manifest say the checkpoint is this session's,
	// unchanged since the pause (sandbox.Checkpointer.Restore).
	var refusal error
	sb, err := c.Restore(ctx, t, dir, func() error {
		refusal = checkCheckpoint(dir, s, sum)
		return refusal
	})
	if refusal != nil {
		if err == nil {
			sb.Close()
		}
		nx.close()
		return "the checkpoint is refused: " + refusal.Error()
	}
	if err != nil {
		nx.close()
		return "the restore failed: " + err.Error()
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
	return ""
}

// sweepCheckpoints removes the checkpoints of sessions the store no longer
// has (ended while no server ran, or whose record was lost): a checkpoint
// is a sandbox's memory, and nothing else removes it.
func (m *Manager) sweepCheckpoints(ctx context.Context) {
	dir, err := store.DataDir(m.eng.Config())
	if err != nil {
		return
	}
	entries, err := os.ReadDir(filepath.Join(dir, checkpointsDir))
	if err != nil {
		return
	}
	for _, e := range entries {
		if _, err := m.st.Get(ctx, recordKey(e.Name())); errors.Is(err, store.ErrNotFound) {
			m.log.Info("removing the checkpoint of a session that no longer exists", "session", e.Name())
			_ = os.RemoveAll(filepath.Join(dir, checkpointsDir, e.Name()))
		}
	}
}

// removeCheckpoint removes session id's checkpoint, if any.
func (m *Manager) removeCheckpoint(id string) {
	if dir, err := m.checkpointPath(id); err == nil {
		if err := os.RemoveAll(dir); err != nil {
			m.log.Warn("a session's checkpoint was not removed", "session", id, "err", err)
		}
	}
}
