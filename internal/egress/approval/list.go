package approval

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"sort"
	"strings"
	"time"
)

// Grant is one approval in force: owner's runs may reach Host until
// Expires.
type Grant struct {
	Owner   string
	Host    string
	Expires time.Time
}

// All returns every principal's approvals in force, by owner then host: the
// operator's view of them.
func (a *Approvals) All(ctx context.Context) ([]Grant, error) {
	entries, err := a.st.List(ctx, prefix)
	if err != nil {
		return nil, fmt.Errorf("approval: reading the approvals: %w", err)
	}
	now := a.now()
	var out []Grant
	for _, e := range entries {
		r, ok := inForce(e.Value, now)
		if !ok {
			continue
		}
		rest := strings.TrimPrefix(e.Key, prefix)
		owner, _, _ := strings.Cut(rest, "/")
		if o, err := url.PathUnescape(owner); err == nil {
			owner = o
		}
		out = append(out, Grant{Owner: owner, Host: r.Host, Expires: r.Expires})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Owner != out[j].Owner {
			return out[i].Owner < out[j].Owner
		}
		return out[i].Host < out[j].Host
	})
	return out, nil
}

// inForce decodes an approval's record and reports whether it is still in
// force at now.
func inForce(v []byte, now time.Time) (record, bool) {
	var r record
	if json.Unmarshal(v, &r) != nil || !now.Before(r.Expires) {
		return record{}, false
	}
	return r, true
}
