package approval

import (
	"context"
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"time"
)

// pendingPrefix is the kind of record of the questions asked and not yet
// answered, in the state store (every replica sees them: in the 2026-07-28
// era the answer may come to another replica).
const pendingPrefix = "egress-approvals-pending/"

// PendingTTL is how long an unanswered question is listed: a client that
// never answers leaves nothing behind for longer.
const PendingTTL = 10 * time.Minute

// Question is an approval asked of a principal's user and not answered
// yet: a run was denied Host, which the operator lets users approve.
type Question struct {
	Owner string    `json:"owner"`
	Host  string    `json:"host"`
	RunID string    `json:"run_id,omitempty"`
	Asked time.Time `json:"asked"`
}

func pendingKey(owner, host string) string {
	return pendingPrefix + url.PathEscape(owner) + "/" + url.PathEscape(strings.ToLower(host))
}

// Asked records that owner's user is being asked about host, for the
// operator's view. A failure to record it is the operator's view's loss
// only: the question is asked all the same.
func (a *Approvals) Asked(ctx context.Context, owner, host, runID string) {
	if a == nil {
		return
	}
	b, err := json.Marshal(Question{Owner: owner, Host: strings.ToLower(host), RunID: runID, Asked: a.now()})
	if err != nil || owner == "" || host == "" {
		return
	}
	_ = a.st.Put(ctx, pendingKey(owner, host), b, PendingTTL)
}

// Answered records that owner's user answered about host (or could not be
// asked after all).
func (a *Approvals) Answered(ctx context.Context, owner, host string) {
	if a == nil {
		return
	}
	_ = a.st.Delete(ctx, pendingKey(owner, host))
}

// Pending returns the questions asked and not answered, oldest first.
func (a *Approvals) Pending(ctx context.Context) ([]Question, error) {
	entries, err := a.st.List(ctx, pendingPrefix)
	if err != nil {
		return nil, err
	}
	cutoff := a.now().Add(-PendingTTL)
	var out []Question
	for _, e := range entries {
		var q Question
		if json.Unmarshal(e.Value, &q) != nil || q.Asked.Before(cutoff) {
			continue
		}
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Asked.Before(out[j].Asked) })
	return out, nil
}
