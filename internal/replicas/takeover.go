package replicas

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// Orphaned reports whether work that a record says holder holds was left
// by a server that is gone: a server whose heartbeat expired or, at this
// server's start, this server's own name (a server on the embedded store
// keeps its name across restarts, and this one has just started, so
// nothing of that name runs).
func (l *Liveness) Orphaned(ctx context.Context, holder string, atStart bool) (bool, error) {
	if holder == l.self {
		return atStart, nil
	}
	live, err := l.Alive(ctx, holder)
	return !live && err == nil, err
}

// ErrClaimed aborts a claim that another server won.
var ErrClaimed = errors.New("another replica took the work over")

// Claim makes the record under key (JSON with a "replica" field naming
// its holder) self's, unless its holder is no longer from: of two
// survivors claiming a gone server's record, one wins and the other gets
// ErrClaimed.
func Claim(ctx context.Context, st store.Store, key, from, self string) error {
	return st.Update(ctx, key, 0, func(old []byte) ([]byte, error) {
		var fields map[string]json.RawMessage
		if old == nil || json.Unmarshal(old, &fields) != nil {
			return nil, ErrClaimed
		}
		var holder string
		if json.Unmarshal(fields["replica"], &holder) != nil || holder != from {
			return nil, ErrClaimed
		}
		fields["replica"], _ = json.Marshal(self)
		return json.Marshal(fields)
	})
}
