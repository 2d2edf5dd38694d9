package sessions

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// A paused session has no sandbox: its workspace is an archive under the
// data directory (pausedDir), readable by the server only and removed when
// the session ends, and its interpreter state is its replay log. Its next
// call resumes it in a new sandbox.

// pausedDir is where paused sessions' archives live, under the data
// directory.
const pausedDir = "paused-sessions"

// manifestName is the archive's first entry: whose workspace it is.
const manifestName = ".mcr-manifest.json"

// manifest binds an archive to its session and owner: the checksum in the
// session's record binds the record to the archive, and the manifest
// refuses an archive whose record was swapped along with it.
type manifest struct {
	SessionID string `json:"session_id"`
	Owner     string `json:"owner"`
	Files     int    `json:"files"`
}

// PauseResult is pause_session's result.
type PauseResult struct {
	SessionID  string `json:"session_id" jsonschema:"the session, now paused: its sandbox is removed, its files kept; the next call to it resumes it"`
	Mode       string `json:"mode" jsonschema:"how its next call brings the state back: restored (its sandbox was checkpointed, the memory of its processes and its files, and is restored exactly) or replayed (its cells run again in order in a new sandbox)"`
	FilesKept  int    `json:"files_kept" jsonschema:"workspace files kept"`
	CellsToRun int    `json:"cells_to_replay" jsonschema:"cells the resume will run again"`
	DurationMs int64  `json:"duration_ms" jsonschema:"how long pausing took"`
	AlreadyWas bool   `json:"already_paused,omitempty" jsonschema:"the session was paused already; nothing changed"`
}

// pausedSandbox stands in for the sandbox of a paused session: there is
// none, and nothing may be sent to it (get resumes the session first).
type pausedSandbox struct{}

var errPaused = errors.New("the session is paused")

func (pausedSandbox) ID() string                  { return "" }
func (pausedSandbox) Ready(context.Context) error { return errPaused }
func (pausedSandbox) Exec(context.Context, sandbox.Job, func(sandbox.Chunk)) (*sandbox.Result, error) {
	return nil, errPaused
}
func (pausedSandbox) Call(context.Context, sandbox.Job, func(sandbox.Chunk)) (*sandbox.Result, error) {
	return nil, errPaused
}
func (pausedSandbox) Ended() <-chan struct{} { return nil }
func (pausedSandbox) Close()                 {}

// archivePath is where session id's workspace is kept while it is paused.
func (m *Manager) archivePath(id string) (string, error) {
	dir, err := store.DataDir(m.eng.Config())
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, pausedDir, id+".tar"), nil
}

// Pause pauses one of ctx's principal's sessions, or any session for an
// operator (pausing, like closing, manages a session without using its
// data); one that another replica holds is paused there.
func (m *Manager) Pause(ctx context.Context, id string) (PauseResult, error) {
	s, err := m.lookup(ctx, id)
	if err != nil {
		if held := m.elsewhere(ctx, id, true); held != nil {
			var out PauseResult
			err := m.forwardTo(ctx, held, opPause, forwardArgs{}, nil, &out)
			return out, err
		}
		return PauseResult{}, err
	}
	return m.pause(ctx, s)
}

// lookup finds a session ctx's principal manages (its own, or any for an
// operator), paused or not, without resuming it.
func (m *Manager) lookup(ctx context.Context, id string) (*session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok || !principal.FromContext(ctx).Owns(s.owner) {
		return nil, invalid("unknown session %q: it never existed, was closed, or expired after being idle; create_session starts a new one", id)
	}
	return s, nil
}

func (m *Manager) pause(ctx context.Context, s *session) (PauseResult, error) {
	start := time.Now()
	s.callMu.Lock()
	defer s.callMu.Unlock()
	s.mu.Lock()
	paused, closed := s.paused, s.closed
	s.mu.Unlock()
	switch {
	case closed:
		return PauseResult{}, invalid("unknown session %q: it never existed, was closed, or expired after being idle; create_session starts a new one", s.id)
	case paused:
		return PauseResult{SessionID: s.id, Mode: ModeReplayed, AlreadyWas: true}, nil
	}
	if q := m.eng.Config().Quotas.PausedSessions; q > 0 {
		if n := m.countOwn(s.owner, true); n >= q {
			return PauseResult{}, &engine.Error{Code: engine.CodeQuota, Message: fmt.Sprintf(
				"over quota: %q already has %d paused sessions, its quota of paused sessions (quotas.paused_sessions); close one with close_session", s.owner, n)}
		}
	}
	snap, err := m.takeSnapshot(ctx, s, "paused")
	if err != nil {
		s.mu.Lock()
		s.noAutoPause = true // the reaper does not try again every second
		s.mu.Unlock()
		return PauseResult{}, err
	}
	path, err := m.archivePath(s.id)
	if err != nil {
		return PauseResult{}, &engine.Error{Code: engine.CodeInternal, Err: err, Message: err.Error()}
	}
	sum, err := writeArchive(path, s.id, s.owner, snap.files)
	if err != nil {
		_ = os.Remove(path)
		return PauseResult{}, &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("keeping the session's files on disk: %v", err)}
	}
	s.mu.Lock()
	old, x := s.sb, s.extras
	s.sb, s.paused, s.archiveSum, s.reattach, s.ref = pausedSandbox{}, true, sum, false, sandbox.Ref{}
	s.extras = &extras{tier: x.tier, specs: x.specs, installed: x.installed, secrets: x.secrets, isolation: x.isolation, tools: x.tools}
	s.mu.Unlock()
	mode := ModeReplayed
	checkpointSum := m.checkpoint(ctx, s, old, x)
	if checkpointSum != "" {
		mode = ModeRestored
		x.close()
	} else {
		// A sandbox shared with forks made in place stays theirs: the
		// paused session gives up its interpreter and its part alone.
		closeSandbox(old, x)
	}
	s.mu.Lock()
	s.checkpointSum = checkpointSum
	s.mu.Unlock()
	if err := m.put(ctx, s); err != nil {
		m.log.Warn("a paused session's record was not written to the state store", "session", s.id, "err", err)
	}
	return PauseResult{SessionID: s.id, Mode: mode, FilesKept: len(snap.files), CellsToRun: len(snap.cells),
		DurationMs: time.Since(start).Milliseconds()}, nil
}

// countOwn counts owner's sessions that are paused (or live).
func (m *Manager) countOwn(owner string, paused bool) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, s := range m.sessions {
		s.mu.Lock()
		p := s.paused
		s.mu.Unlock()
		if s.owner == owner && p == paused {
			n++
		}
	}
	return n
}

// writeArchive writes files as a tar archive at path, readable by the
// server only, and returns its SHA-256, which resume checks.
func writeArchive(path, id, owner string, files []wire.File) (string, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return "", err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", err
	}
	h := sha256.New()
	tw := tar.NewWriter(io.MultiWriter(f, h))
	man, _ := json.Marshal(manifest{SessionID: id, Owner: owner, Files: len(files)})
	entries := append([]wire.File{{Path: manifestName, Data: man}}, files...)
	for _, e := range entries {
		if err = tw.WriteHeader(&tar.Header{Name: e.Path, Mode: 0o644, Size: int64(len(e.Data)), Typeflag: tar.TypeReg}); err != nil {
			break
		}
		if _, err = tw.Write(e.Data); err != nil {
			break
		}
	}
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return hex.EncodeToString(h.Sum(nil)), err
}

// readArchive reads the archive of owner's session id, refusing one whose
// checksum is not the one written at pause or whose manifest names another
// session or owner.
func readArchive(path, id, owner, sum string) ([]wire.File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("its kept files are gone (%v)", err)
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
		return nil, errors.New("its kept files were changed on disk (the archive's checksum is not the one written when it was paused): the archive is corrupted or not its own")
	}
	tr := tar.NewReader(bytes.NewReader(data))
	var files []wire.File
	var man manifest
	for i := 0; ; i++ {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("its kept files are not a readable archive: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("its kept files are not a readable archive: %v", err)
		}
		if i == 0 {
			switch {
			case h.Name != manifestName || json.Unmarshal(b, &man) != nil:
				return nil, errors.New("its kept files are not an archive of a paused session (no manifest)")
			case man.SessionID != id:
				return nil, fmt.Errorf("its kept files are the archive of another session (%s)", man.SessionID)
			case man.Owner != owner:
				return nil, errors.New("its kept files are the archive of another principal's session")
			}
			continue
		}
		if err := wire.ValidPath(h.Name); err != nil || h.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("its kept files hold an entry that is not a workspace file (%q)", h.Name)
		}
		files = append(files, wire.File{Path: h.Name, Data: b})
	}
	if man.SessionID != id || len(files) != man.Files {
		return nil, errors.New("its kept files are incomplete")
	}
	return files, nil
}

// resume brings a paused session back in a new sandbox: files restored,
// cells replayed. The caller holds s.callMu. A session whose archive is
// refused ends, with the reason.
func (m *Manager) resume(ctx context.Context, s *session) error {
	start := time.Now()
	if err := m.reserve(s.owner); err != nil {
		return fmt.Errorf("session %s is paused and cannot be resumed now: %w", s.id, err)
	}
	defer m.unreserve(s.owner)
	s.mu.Lock()
	sum, r, lost, checkpointSum := s.archiveSum, s.replay, s.lost, s.checkpointSum
	s.mu.Unlock()
	refused := ""
	if checkpointSum != "" {
		if refused = m.restore(ctx, s, checkpointSum, start); refused == "" {
			return nil
		}
	}
	var files []wire.File
	path, err := m.archivePath(s.id)
	if lost == "" { // a lost sandbox left no archive: the cells alone rebuild it
		if err != nil {
			return &engine.Error{Code: engine.CodeInternal, Err: err, Message: err.Error()}
		}
		if files, err = readArchive(path, s.id, s.owner, sum); err != nil {
			m.drop(s)
			return invalid("session %s cannot be resumed: %v; it is closed now; create_session starts a new one", s.id, err)
		}
	}
	x := s.extras
	sb, nx, err := m.start(ctx, s.owner, s.lang, Options{Network: x.tier, Packages: x.specs, Secrets: x.secrets, Isolation: string(x.isolation), Tools: x.tools}, s.idle)
	if err != nil {
		return err
	}
	s.mu.Lock()
	s.sb, s.extras = sb, nx
	s.mu.Unlock()
	if err := m.rebuild(ctx, s, &snapshot{files: files, cells: r.Cells}); err != nil {
		s.mu.Lock()
		s.sb, s.extras = pausedSandbox{}, x
		s.mu.Unlock()
		sb.Close()
		nx.close()
		return fmt.Errorf("session %s is paused and could not be resumed (it stays paused): %w", s.id, err)
	}
	s.mu.Lock()
	s.paused, s.archiveSum, s.lost = false, "", ""
	if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok {
		s.ref, s.reattach = ra.RefOf(sb)
	}
	s.resumed = &engine.Resumed{Mode: ModeReplayed, Cause: engine.ResumedPaused, CheckpointRefused: refused, CellsReplayed: len(r.Cells), FilesRestored: len(files), DurationMs: time.Since(start).Milliseconds()}
	if lost != "" {
		s.resumed.Cause = engine.ResumedRestart
		s.resumed.Lost = "workspace files that no replayed cell wrote: " + lost
	}
	s.mu.Unlock()
	if path != "" {
		_ = os.Remove(path)
	}
	if err := m.put(ctx, s); err != nil {
		m.log.Warn("a resumed session's record was not written to the state store", "session", s.id, "err", err)
	}
	return nil
}

// removeArchive removes an ended session's kept files and checkpoint, if
// any.
func (m *Manager) removeArchive(id string) {
	m.removeCheckpoint(id)
	if path, err := m.archivePath(id); err == nil {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			m.log.Warn("a closed session's kept files were not removed", "session", id, "err", err)
		}
	}
}
