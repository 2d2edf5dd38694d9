package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/packages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Every live session is a record in the state store, written before
// create_session answers and deleted when the session ends, so that the
// next server on the store (after a restart) re-attaches to its sandbox
// (Recover), and the sweep keeps that sandbox meanwhile (Sandboxes).
const (
	recordPrefix = "sessions/"
	// touchEvery bounds how often a session's use is written: its last
	// use is known to a next server within this, which only moves its
	// idle expiry that much earlier.
	touchEvery = 5 * time.Second
	// storeTimeout bounds one background write.
	storeTimeout = 10 * time.Second
	// reattachParallel bounds the sessions re-attached at once.
	reattachParallel = 4
)

// record is a session as the store keeps it.
type record struct {
	ID          string                    `json:"id"`
	Owner       string                    `json:"owner"`
	Language    string                    `json:"language"`
	Sandbox     sandbox.Ref               `json:"sandbox"`
	Reattach    bool                      `json:"reattach"` // the backend can re-attach to Sandbox
	Network     string                    `json:"network,omitempty"`
	Isolation   sandbox.Isolation         `json:"isolation,omitempty"`
	PackagesDir string                    `json:"packages_dir,omitempty"`
	Specs       []string                  `json:"specs,omitempty"`
	Packages    []engine.InstalledPackage `json:"packages,omitempty"`
	Created     time.Time                 `json:"created"`
	LastUsed    time.Time                 `json:"last_used"`
	IdleSeconds int                       `json:"idle_seconds"`
	Calls       int                       `json:"calls"`
	Replica     string                    `json:"replica"`
	// Replay is the session's replay log, for fork_session.
	Replay replayLog `json:"replay"`
	// Paused says the session has no sandbox; its files are in its
	// archive, whose SHA-256 is ArchiveSum.
	Paused     bool   `json:"paused,omitempty"`
	ArchiveSum string `json:"archive_sum,omitempty"`
	// CheckpointSum, for a paused session whose sandbox was checkpointed
	// (under the data directory of the replica that paused it), is the
	// checkpoint's SHA-256 (checkpoint.go).
	CheckpointSum string `json:"checkpoint_sum,omitempty"`
	// Lost, for a paused session without an archive, says why its sandbox
	// did not survive its server: its resume replays its cells alone.
	Lost string `json:"lost,omitempty"`
	// ForkOf names the session in whose sandbox this one's interpreter is
	// a fork: a restarted server re-attaches that one alone, and this one's
	// next call replays its cells in a sandbox of its own.
	ForkOf string `json:"fork_of,omitempty"`
	// Secrets name the operator's secrets the session uses; their values
	// are never written here: each new sandbox of the session checks the
	// names again and takes the values from the server's configuration.
	Secrets []string `json:"secrets,omitempty"`
	// Tools name the MCP servers the session's calls may call (code mode).
	Tools []string `json:"tools,omitempty"`
}

func recordKey(id string) string { return recordPrefix + id }

// Option configures a Manager.
type Option func(*Manager)

// WithReplica names this server among those sharing the store (as
// executions.WithReplica; default "local").
func WithReplica(name string) Option { return func(m *Manager) { m.replica = name } }

// WithLogger logs the manager's store failures and re-attaches to log.
func WithLogger(log *slog.Logger) Option { return func(m *Manager) { m.log = log } }

// WithGate makes the sessions' egress proxies those of g, the gate the
// engine's runs use (its secrets, approvals and observer); without it the
// manager makes a gate of its own from the engine's configuration, with
// no secrets and nobody observing.
func WithGate(g *gate.Gate) Option { return func(m *Manager) { m.gate = g } }

// WithToolBroker checks the tools (code mode) a session asks for against
// b, the broker the engine's runs call them through
// (engine.WithToolBroker); without it a session takes none.
func WithToolBroker(b engine.ToolBroker) Option { return func(m *Manager) { m.tools = b } }

// record returns s as the store keeps it.
func (m *Manager) record(s *session) record {
	s.mu.Lock()
	defer s.mu.Unlock()
	x := s.extras
	x.mu.Lock()
	specs, installed := append([]string(nil), x.specs...), append([]engine.InstalledPackage(nil), x.installed...)
	x.mu.Unlock()
	return record{ID: s.id, Owner: s.owner, Language: s.lang.Name, Sandbox: s.ref, Reattach: s.reattach,
		Network: x.tier, Isolation: x.isolation, PackagesDir: x.dir, Specs: specs, Packages: installed, Created: s.created,
		LastUsed: s.lastUsed, IdleSeconds: int(s.idle.Seconds()), Calls: s.calls, Replica: m.replica, Replay: s.replay,
		Paused: s.paused, ArchiveSum: s.archiveSum, CheckpointSum: s.checkpointSum, Lost: s.lost, Secrets: x.secrets, ForkOf: s.forkOf, Tools: x.tools}
}

// put writes s's record.
func (m *Manager) put(ctx context.Context, s *session) error {
	b, err := json.Marshal(m.record(s))
	if err != nil {
		return err
	}
	return m.st.Put(ctx, recordKey(s.id), b, 0)
}

// written notes a use of s and, at most every touchEvery, writes its
// record in the background. A record deleted meanwhile (the session ended)
// stays deleted.
func (m *Manager) written(s *session) { m.write(s, false) }

// write writes s's record in the background: now, or with due, at most
// every touchEvery. A record deleted meanwhile (the session ended) stays
// deleted. The record is read when the store commits, so of two writes
// the later holds the latest state.
func (m *Manager) write(s *session, now bool) {
	s.mu.Lock()
	due := !s.closed && (now || time.Since(s.lastWrite) >= touchEvery)
	if due {
		s.lastWrite = time.Now()
	}
	s.mu.Unlock()
	if !due {
		return
	}
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
		defer cancel()
		err := m.st.Update(ctx, recordKey(s.id), 0, func(old []byte) ([]byte, error) {
			if old == nil {
				return nil, nil
			}
			return json.Marshal(m.record(s))
		})
		if err != nil {
			m.log.Warn("a session's last use was not written to the state store", "session", s.id, "err", err)
		}
	}()
}

// forget deletes s's record.
func (m *Manager) forget(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := m.st.Delete(ctx, recordKey(id)); err != nil {
		m.log.Warn("an ended session's record was not deleted from the state store; the next server removes it", "session", id, "err", err)
	}
}

// Sandboxes lists the sandboxes that the store says live sessions own, for
// the sweep to keep (docker.Backend.SetKeep).
func Sandboxes(st store.Store) func(context.Context) ([]sandbox.Ref, error) {
	return func(ctx context.Context) ([]sandbox.Ref, error) {
		entries, err := st.List(ctx, recordPrefix)
		if err != nil {
			return nil, err
		}
		var refs []sandbox.Ref
		for _, e := range entries {
			var r record
			if json.Unmarshal(e.Value, &r) == nil && r.Sandbox.ID != "" {
				refs = append(refs, r.Sandbox)
			}
		}
		return refs, nil
	}
}

// Recover re-attaches to the sessions that a stopped server left: those of
// this server's name (a server on the embedded store keeps its name across
// restarts, and this one has just started) and those of replicas whose
// heartbeat has expired. A session that cannot be re-attached to (its
// sandbox ended, its backend cannot, or it had network access, whose
// egress proxy lived in the stopped server) is kept without a sandbox, as
// a paused one without an archive: its old sandbox is removed, and its next
// call rebuilds it in a new sandbox by replaying its cells, which the
// call's result reports (resumed, cause restart). Only a session whose
// state cannot be replayed (its replay log overflowed, its language is
// gone) ends, and the log says why. Serve calls it once, after executions'
// Recover (which writes this server's heartbeat) and before it serves.
func (m *Manager) Recover(ctx context.Context) error {
	if err := m.recoverOrphans(ctx, true); err != nil {
		return err
	}
	m.sweepCheckpoints(ctx)
	if store.IsShared(m.st) {
		// Replicas that die later leave sessions too: the survivors
		// look for them as often as heartbeats expire.
		m.wg.Add(1)
		go m.adoptLoop(context.WithoutCancel(ctx))
	}
	return nil
}

// adoptLoop repeats recoverOrphans until Shutdown.
func (m *Manager) adoptLoop(base context.Context) {
	defer m.wg.Done()
	t := time.NewTicker(replicas.HeartbeatPeriod)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(base, storeTimeout)
		if err := m.recoverOrphans(ctx, false); err != nil {
			m.log.Warn("looking for the sessions of stopped replicas", "err", err)
		}
		cancel()
	}
}

// recoverOrphans re-attaches to (or ends) the sessions of stopped servers:
// replicas whose heartbeat expired and, at start, this server's own name.
func (m *Manager) recoverOrphans(ctx context.Context, atStart bool) error {
	entries, err := m.st.List(ctx, recordPrefix)
	if err != nil {
		return fmt.Errorf("reading the sessions of the state store: %w", err)
	}
	liveness := replicas.NewLiveness(m.st, m.replica)
	var orphans []record
	for _, e := range entries {
		var r record
		if err := json.Unmarshal(e.Value, &r); err != nil || r.ID == "" {
			m.log.Warn("removing an unreadable session record from the state store", "key", e.Key, "err", err)
			_ = m.st.Delete(ctx, e.Key)
			continue
		}
		orphaned, err := liveness.Orphaned(ctx, r.Replica, atStart)
		if err != nil {
			return fmt.Errorf("reading server %s's heartbeat: %w", r.Replica, err)
		}
		if orphaned {
			orphans = append(orphans, r)
		}
	}
	var wg sync.WaitGroup
	slots := make(chan struct{}, reattachParallel)
	for _, r := range orphans {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-slots }()
			if r.Replica != m.replica {
				if err := replicas.Claim(ctx, m.st, recordKey(r.ID), r.Replica, m.replica); err != nil {
					if !errors.Is(err, replicas.ErrClaimed) {
						m.log.Warn("a session of a stopped replica could not be claimed; retrying later", "session", r.ID, "replica", r.Replica, "err", err)
					}
					return
				}
			}
			m.recoverOne(ctx, r)
		}()
	}
	wg.Wait()
	return nil
}

// recoverOne re-attaches to r's sandbox, or keeps the session to be
// replayed at its next call, or ends it.
func (m *Manager) recoverOne(ctx context.Context, r record) {
	lang, ok := m.eng.Registry().Lookup(r.Language)
	ra, canReattach := m.eng.Backend().(sandbox.Reattacher)
	switch {
	case !ok:
		m.endRecovered(ctx, r, "its language is not in this server's registry", nil)
	case r.Paused:
		// Nothing to re-attach to: its next call resumes it.
		m.keepPaused(ctx, r, lang, r.Lost)
	case r.ForkOf != "":
		// Its sandbox and packages are the original's, which re-attaches
		// alone; the copy of the interpreter it held is not reached again.
		r.Sandbox, r.PackagesDir = sandbox.Ref{}, ""
		m.keepPaused(ctx, r, lang, "its interpreter was a fork in the sandbox of session "+r.ForkOf+", which a restarted server re-attaches to that session alone")
	case !canReattach || !r.Reattach:
		m.replayRecovered(ctx, r, lang, "its sandbox backend cannot re-attach to a sandbox", nil)
	case r.Network != "" && r.Network != egress.TierNone:
		m.replayRecovered(ctx, r, lang, "it had network access, whose egress proxy does not survive its server", nil)
	default:
		m.reattachRecovered(ctx, r, lang, ra)
	}
}

// endRecovered ends r's session, removing what it had (its sandbox, its
// packages, its archive), and logs why.
func (m *Manager) endRecovered(ctx context.Context, r record, why string, err error) {
	if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok && r.Sandbox.ID != "" {
		ra.Remove(ctx, r.Sandbox)
	}
	if r.PackagesDir != "" {
		(&extras{dir: r.PackagesDir}).close()
	}
	if r.Paused {
		m.removeArchive(r.ID)
	}
	m.forget(r.ID)
	m.log.Warn("a session of a stopped server ended: "+why, "session", r.ID, "owner", r.Owner, "language", r.Language, "err", err)
}

// keepPaused keeps r's session without a sandbox: its next call resumes it
// (from its archive, or, lost, from its cells alone).
func (m *Manager) keepPaused(ctx context.Context, r record, lang languages.Language, lost string) {
	s := &session{id: r.ID, owner: r.Owner, lang: lang, sb: pausedSandbox{}, created: r.Created, lastUsed: r.LastUsed,
		idle: time.Duration(r.IdleSeconds) * time.Second, calls: r.Calls, lastWrite: time.Now(), replay: r.Replay,
		paused: true, archiveSum: r.ArchiveSum, checkpointSum: map[bool]string{true: r.CheckpointSum}[lost == ""], lost: lost, extras: &extras{tier: r.Network, specs: r.Specs, installed: r.Packages, secrets: r.Secrets, isolation: r.Isolation, tools: r.Tools}}
	if err := m.put(ctx, s); err != nil {
		m.endRecovered(ctx, r, "its record could not be written back to the state store", err)
		return
	}
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
}

// replayRecovered gives up r's sandbox: the session is rebuilt at its
// next call from its cells, or ends when they cannot be replayed.
func (m *Manager) replayRecovered(ctx context.Context, r record, lang languages.Language, why string, err error) {
	if r.Replay.Overflow != "" {
		m.endRecovered(ctx, r, why+", and its state cannot be replayed because "+r.Replay.Overflow, err)
		return
	}
	if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok && r.Sandbox.ID != "" {
		ra.Remove(ctx, r.Sandbox)
	}
	if r.PackagesDir != "" {
		(&extras{dir: r.PackagesDir}).close()
	}
	r.Sandbox, r.PackagesDir, r.ArchiveSum = sandbox.Ref{}, "", ""
	m.keepPaused(ctx, r, lang, why)
	m.log.Warn("a session of a stopped server lost its sandbox: its next call replays its cells in a new one ("+why+")",
		"session", r.ID, "owner", r.Owner, "language", r.Language, "cells", len(r.Replay.Cells), "err", err)
}

// reattachRecovered takes r's sandbox over through ra, or replays the
// session when that fails.
func (m *Manager) reattachRecovered(ctx context.Context, r record, lang languages.Language, ra sandbox.Reattacher) {
	created := time.Now()
	sb, err := ra.Reattach(ctx, r.Sandbox)
	if err != nil {
		m.replayRecovered(ctx, r, lang, "its sandbox could not be re-attached to", err)
		return
	}
	ref, _ := ra.RefOf(sb)
	x := &extras{tier: r.Network, dir: r.PackagesDir, specs: r.Specs, installed: r.Packages, isolation: r.Isolation, tools: r.Tools}
	if x.dir != "" {
		pm, _ := m.eng.Registry().PackageManager(lang)
		x.env = packages.Env(pm)
	}
	s := &session{id: r.ID, owner: r.Owner, lang: lang, sb: sb, extras: x, created: r.Created, lastUsed: r.LastUsed,
		idle: time.Duration(r.IdleSeconds) * time.Second, calls: r.Calls, ref: ref, reattach: true, lastWrite: created, replay: r.Replay}
	if err := m.put(ctx, s); err != nil {
		sb.Close()
		m.endRecovered(ctx, r, "its record could not be written back to the state store", err)
		return
	}
	m.mu.Lock()
	m.sessions[s.id] = s
	m.mu.Unlock()
	m.log.Info("re-attached to a session of a stopped server", "session", r.ID, "owner", r.Owner, "language", r.Language, "took", time.Since(created))
}
