package sessions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/replicas"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Sessions among replicas. A session's sandbox is held by the replica
// that made it (or re-attached to it), since its agent link is a
// connection to that process. A call for it that reaches another replica
// is forwarded to the holder (replicas.Directory), which runs it as the same
// principal and streams a run's output back; the caller's replica answers
// the client as if it held the session. The owner check happens on both
// sides, and another principal's session is "unknown" on both.

// Forwarder reaches the replica that holds a session: a replicas.Directory.
type Forwarder interface {
	Call(ctx context.Context, replica, op string, body any, onChunk func(sandbox.Chunk)) (json.RawMessage, error)
}

// SetForwarder forwards calls for sessions held by other replicas through
// f; without it, such a session is unknown here. Serve sets it once it
// listens (the URL the other replicas reach it at may name the port it
// got), before it takes calls.
func (m *Manager) SetForwarder(f Forwarder) { m.fwd = f }

// The operations a replica forwards.
const (
	opRun        = "session.run"
	opInstall    = "session.install"
	opWriteFiles = "session.write_files"
	opReadFile   = "session.read_file"
	opListFiles  = "session.list_files"
	opClose      = "session.close"
	opPause      = "session.pause"
	opFork       = "session.fork"
)

// forwardArgs is every operation's body.
type forwardArgs struct {
	ID      string             `json:"id"`
	Request *engine.Request    `json:"request,omitempty"`
	Long    bool               `json:"long,omitempty"`
	Specs   []string           `json:"specs,omitempty"`
	Files   []engine.InputFile `json:"files,omitempty"`
	Path    string             `json:"path,omitempty"`
}

// heldElsewhere is get's answer for a session that another live replica
// holds.
type heldElsewhere struct{ rec record }

func (h *heldElsewhere) Error() string {
	return fmt.Sprintf("session %s is held by replica %s", h.rec.ID, h.rec.Replica)
}

type forwardedKey struct{}

// forwarded reports whether ctx is a call another replica forwarded here,
// which is never forwarded again.
func forwarded(ctx context.Context) bool { return ctx.Value(forwardedKey{}) != nil }

// elsewhere looks id up in the store for a session that ctx's principal
// may use (owns, for an operator's close) and that another replica holds:
// a *heldElsewhere, or nil when there is none to forward to.
func (m *Manager) elsewhere(ctx context.Context, id string, operatorMay bool) *heldElsewhere {
	if m.fwd == nil || forwarded(ctx) || id == "" {
		return nil
	}
	v, err := m.st.Get(ctx, recordKey(id))
	if err != nil {
		return nil
	}
	var r record
	if json.Unmarshal(v, &r) != nil || r.Replica == m.replica {
		return nil
	}
	p := principal.FromContext(ctx)
	if may := p.Uses(r.Owner) || operatorMay && p.Owns(r.Owner); !may {
		return nil
	}
	return &heldElsewhere{rec: r}
}

// forwardTo runs op on the replica holding h's session and decodes its
// result into out.
func (m *Manager) forwardTo(ctx context.Context, h *heldElsewhere, op string, args forwardArgs, onChunk func(sandbox.Chunk), out any) error {
	args.ID = h.rec.ID
	raw, err := m.fwd.Call(ctx, h.rec.Replica, op, args, onChunk)
	var ee *engine.Error
	switch {
	case errors.As(err, &ee):
		return err
	case errors.Is(err, replicas.ErrGone):
		return &engine.Error{Code: engine.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"session %s is held by replica %s, which has stopped; if its sandbox lives, another replica re-attaches to it within about 20 s: retry then", h.rec.ID, h.rec.Replica)}
	case err != nil:
		return &engine.Error{Code: engine.CodeUnavailable, Err: err, Message: fmt.Sprintf(
			"session %s is held by replica %s, which this replica could not reach (%v); retry, or ask the operator to check the replicas' advertised URLs", h.rec.ID, h.rec.Replica, err)}
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(raw, out); err != nil {
		return &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("replica %s answered an unreadable result: %v", h.rec.Replica, err)}
	}
	return nil
}

// ServeForwarded runs a call another replica forwarded for a session this
// one holds (replicas.Target), as the principal in ctx.
func (m *Manager) ServeForwarded(ctx context.Context, op string, body json.RawMessage, onChunk func(sandbox.Chunk)) (any, error) {
	ctx = context.WithValue(ctx, forwardedKey{}, true)
	var a forwardArgs
	if err := json.Unmarshal(body, &a); err != nil {
		return nil, invalid("unreadable forwarded call: %v", err)
	}
	switch op {
	case opRun:
		if a.Request == nil {
			return nil, invalid("a forwarded run without its request")
		}
		req := *a.Request
		req.SessionID = a.ID
		plan, err := m.Prepare(ctx, req)
		if err != nil {
			return nil, err
		}
		return m.RunPlan(ctx, plan, engine.RunOptions{Long: a.Long, OnChunk: onChunk})
	case opInstall:
		return m.InstallPackages(ctx, a.ID, a.Specs)
	case opWriteFiles:
		return struct{}{}, m.WriteFiles(ctx, a.ID, a.Files)
	case opReadFile:
		return m.ReadFile(ctx, a.ID, a.Path)
	case opListFiles:
		return m.ListFiles(ctx, a.ID, a.Path)
	case opClose:
		return m.Close(ctx, a.ID)
	case opPause:
		return m.Pause(ctx, a.ID)
	case opFork:
		return m.Fork(ctx, a.ID)
	}
	return nil, invalid("unknown forwarded operation %q", op)
}

// remoteInfos returns the sessions of ctx's principal (every principal's,
// for an operator) that other live replicas hold, from their records.
func (m *Manager) remoteInfos(ctx context.Context) []Info {
	if m.fwd == nil || forwarded(ctx) {
		return nil
	}
	entries, err := m.st.List(ctx, recordPrefix)
	if err != nil {
		m.log.Warn("listing the sessions other replicas hold", "err", err)
		return nil
	}
	p := principal.FromContext(ctx)
	liveness := replicas.NewLiveness(m.st, m.replica)
	var out []Info
	for _, e := range entries {
		var r record
		if json.Unmarshal(e.Value, &r) != nil || r.Replica == m.replica || !p.Owns(r.Owner) {
			continue
		}
		// A heartbeat the store did not answer for counts as live: the
		// session is listed rather than hidden.
		if live, err := liveness.Alive(ctx, r.Replica); !live && err == nil {
			continue
		}
		out = append(out, m.infoOf(r, p.Operator))
	}
	return out
}

// infoOf is a record's Info as list_sessions shows it.
func (m *Manager) infoOf(r record, withOwner bool) Info {
	idle := secondsDuration(r.IdleSeconds)
	expires := r.LastUsed.Add(idle)
	if end := r.Created.Add(secondsDuration(m.cfg.MaxLifeSeconds)); end.Before(expires) {
		expires = end
	}
	info := Info{SessionID: r.ID, Language: r.Language, CreatedAt: r.Created, LastUsedAt: r.LastUsed,
		IdleTimeoutSeconds: r.IdleSeconds, ExpiresAt: expires, Calls: r.Calls, Network: r.Network, Packages: r.Packages}
	if lang, ok := m.eng.Registry().Lookup(r.Language); ok {
		info.Stateful = lang.Kernel != nil
	}
	if withOwner {
		info.Owner = r.Owner
	}
	return info
}

func secondsDuration(n int) time.Duration { return time.Duration(n) * time.Second }
