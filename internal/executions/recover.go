package executions

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Recover ends, as interrupted, every execution the store says is running
// on a server that is gone: one of this replica's own name (a server on
// the embedded store keeps its name across restarts, and this one has
// just started, so nothing of that name runs), or of a replica whose
// heartbeat has expired. Each keeps the output received until then. Then
// it starts this replica's heartbeat (replicas.Heartbeat), which repeats
// the check for other replicas' executions until Shutdown. Serve calls it once, before it
// serves.
func (m *Manager) Recover(ctx context.Context) error {
	if err := m.heartbeat.Beat(ctx); err != nil {
		return fmt.Errorf("writing this server's heartbeat to the state store: %w", err)
	}
	if _, err := m.interruptOrphans(ctx, true); err != nil {
		return fmt.Errorf("ending the executions a stopped server left running: %w", err)
	}
	m.heartbeat.Run(ctx, func(ctx context.Context) {
		if _, err := m.interruptOrphans(ctx, false); err != nil {
			m.log.Warn("checking for executions of stopped servers", "err", err)
		}
	})
	return nil
}

// interruptOrphans ends the running executions of gone replicas (and, at
// start, of this replica's name) and returns how many it ended.
func (m *Manager) interruptOrphans(ctx context.Context, atStart bool) (int, error) {
	entries, err := m.st.List(ctx, recordPrefix)
	if err != nil {
		return 0, err
	}
	liveness := replicas.NewLiveness(m.st, m.replica)
	n := 0
	for _, e := range entries {
		var r record
		if json.Unmarshal(e.Value, &r) != nil || r.Status != StatusRunning {
			continue
		}
		orphaned, err := liveness.Orphaned(ctx, r.Replica, atStart)
		if err != nil {
			return n, err
		}
		if !orphaned {
			continue
		}
		if r.Replica == m.replica {
			m.mu.Lock()
			_, ours := m.execs[r.ID]
			m.mu.Unlock()
			if ours {
				continue
			}
		}
		if err := m.interrupt(ctx, r.ID); err != nil {
			return n, err
		}
		m.log.Warn("an execution left running by a stopped server ended as interrupted", "execution", r.ID, "replica", r.Replica, "owner", r.Owner)
		n++
	}
	return n, nil
}

// interrupt ends a running execution's record as interrupted, keeping its
// output (now with the retention as TTL).
func (m *Manager) interrupt(ctx context.Context, id string) error {
	ttl := m.retention()
	var sizes record
	err := m.st.Update(ctx, recordKey(id), ttl, func(old []byte) ([]byte, error) {
		var r record
		if old == nil || json.Unmarshal(old, &r) != nil || r.Status != StatusRunning {
			return old, nil // ended meanwhile (or gone): left as it is
		}
		r.Status, r.Ended = StatusInterrupted, time.Now()
		r.Error = fmt.Sprintf("the server running it (%s) stopped or restarted while it ran; the output received until then is kept", r.Replica)
		sizes = r
		return json.Marshal(r)
	})
	if err != nil || sizes.ID == "" {
		return err
	}
	for stream, size := range map[string]int{"stdout": sizes.StdoutBytes, "stderr": sizes.StderrBytes} {
		prefix := outputPrefix(id, stream)
		data, err := store.GetBlob(ctx, m.st, prefix, size)
		if err != nil {
			continue // not all of it was written: what there is expires with nothing to read it
		}
		if err := m.putChunks(ctx, prefix, data, 0, ttl); err != nil {
			return err
		}
	}
	return nil
}
