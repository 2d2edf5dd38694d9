// Package outputs keeps what a run leaves behind that a client reads
// later: full stdout and stderr that did not fit inline (behind
// mcr://runs/...) and the files a run made (behind mcr://artifacts/...).
// A [Store] keeps them in the state store for a while, each readable only
// by the principal whose run made it; [Runs] and [Artifacts] are the two
// stores a server keeps, sized by the operator's configuration.
package outputs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// URIPrefix begins the URI of every kept output.
const URIPrefix = "mcr://runs/"

// URI returns the resource URI of one stream of one stage of a run.
// The run id is 64 random bits: a URI cannot be guessed, and the store
// answers only the principal that made the run in any case.
func URI(runID, stage, stream string) string {
	if stage == "run" {
		return fmt.Sprintf("%s%s/%s", URIPrefix, runID, stream)
	}
	return fmt.Sprintf("%s%s/%s/%s", URIPrefix, runID, stage, stream)
}

// storeTimeout bounds one operation of the output store on the state
// store, whose callers (result shaping, resources/read) have no deadline of
// their own to pass.
const storeTimeout = 30 * time.Second

// keptOutput is the record of one kept output in the state store; its bytes
// are a blob beside it ([store.PutBlob]).
type keptOutput struct {
	URI     string    `json:"uri"`
	Owner   string    `json:"owner"`
	Created time.Time `json:"created"`
	Size    int       `json:"size"`
}

// Store keeps full outputs that did not fit inline (or artifacts),
// for a while and up to a total size; the oldest go first. It keeps them in
// the state store, so that every replica, and the server after a restart,
// reads them by the same URIs. Each output belongs to the principal whose
// run made it: only that principal reads or lists it, and with an owner
// quota a principal's outputs past it push out its own oldest ones, never
// another principal's.
//
// Keys: KIND/meta/OWNER/URI holds the record, KIND/data/OWNER/URI/NNNNNN
// the bytes (owner and URI path-escaped), both with the retention as TTL.
type Store struct {
	st       store.Store
	kind     string // "outputs" or "artifacts": the first segment of its keys
	maxBytes int
	ownerMax int // 0: no per-owner quota
	ttl      time.Duration
	now      func() time.Time
}

// New returns a store of at most maxBytes in st, under keys
// beginning with kind, keeping outputs for ttl, and at most ownerMax bytes
// per owner (0: no per-owner quota).
func New(st store.Store, kind string, maxBytes, ownerMax int, ttl time.Duration) *Store {
	return &Store{st: st, kind: kind, maxBytes: maxBytes, ownerMax: ownerMax, ttl: ttl, now: time.Now}
}

// Runs returns the store of full outputs in st, sized and kept as cfg
// says (output_store_mb, quotas.output_store_mb, the output retention).
func Runs(cfg config.Config, st store.Store) *Store {
	return New(st, "outputs", cfg.OutputStoreMB<<20, cfg.Quotas.OutputStoreMB<<20, cfg.OutputRetention())
}

// Artifacts returns the store of artifacts in st, sized and kept as cfg
// says (artifacts.store_mb, quotas.artifact_store_mb,
// artifacts.retention_seconds).
func Artifacts(cfg config.Config, st store.Store) *Store {
	return New(st, "artifacts", cfg.Artifacts.StoreMB<<20, cfg.Quotas.ArtifactStoreMB<<20, time.Duration(cfg.Artifacts.RetentionSeconds)*time.Second)
}

func (s *Store) ownerPrefix(owner string) string {
	return s.kind + "/meta/" + url.PathEscape(owner) + "/"
}

func (s *Store) metaKey(uri, owner string) string {
	return s.ownerPrefix(owner) + url.PathEscape(uri)
}

func (s *Store) dataPrefix(uri, owner string) string {
	return s.kind + "/data/" + url.PathEscape(owner) + "/" + url.PathEscape(uri)
}

// live reports whether an output is within its retention by this store's
// clock (the state store's TTL removes it at about the same time).
func (s *Store) live(k keptOutput) bool { return k.Created.After(s.now().Add(-s.ttl)) }

// Put keeps data under uri for owner.
func (s *Store) Put(uri, owner string, data []byte) error {
	limit := s.maxBytes
	if s.ownerMax > 0 {
		limit = min(limit, s.ownerMax)
	}
	data = data[:min(len(data), limit)]
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if old, ok := s.record(ctx, uri, owner); ok {
		s.remove(ctx, old)
	}
	k := keptOutput{URI: uri, Owner: owner, Created: s.now(), Size: len(data)}
	// The bytes first, the record last: a reader that finds the record
	// finds all of its bytes.
	if err := store.PutBlob(ctx, s.st, s.dataPrefix(uri, owner), data, s.ttl); err != nil {
		return fmt.Errorf("keeping %s: %w", uri, err)
	}
	rec, err := json.Marshal(k)
	if err != nil {
		return err
	}
	if err := s.st.Put(ctx, s.metaKey(uri, owner), rec, s.ttl); err != nil {
		return fmt.Errorf("keeping %s: %w", uri, err)
	}
	return s.evict(ctx, k)
}

// evict removes expired outputs, then owner's oldest past its quota, then
// the oldest of all past the store's size; just is never among them.
func (s *Store) evict(ctx context.Context, just keptOutput) error {
	all, err := s.records(ctx, s.kind+"/meta/")
	if err != nil {
		return err
	}
	// Oldest first; the output just kept last, whatever the clocks say.
	slices.SortStableFunc(all, func(a, b keptOutput) int {
		aj, bj := a.URI == just.URI && a.Owner == just.Owner, b.URI == just.URI && b.Owner == just.Owner
		if aj != bj {
			if aj {
				return 1
			}
			return -1
		}
		return a.Created.Compare(b.Created)
	})
	total, ownerBytes := 0, 0
	kept := all[:0]
	for _, k := range all {
		if !s.live(k) {
			s.remove(ctx, k)
			continue
		}
		kept = append(kept, k)
		total += k.Size
		if k.Owner == just.Owner {
			ownerBytes += k.Size
		}
	}
	gone := map[int]bool{}
	for i, k := range kept {
		if s.ownerMax == 0 || ownerBytes <= s.ownerMax {
			break
		}
		if k.Owner == just.Owner {
			s.remove(ctx, k)
			gone[i] = true
			ownerBytes -= k.Size
			total -= k.Size
		}
	}
	for i, k := range kept {
		if total <= s.maxBytes {
			break
		}
		if !gone[i] {
			s.remove(ctx, k)
			total -= k.Size
		}
	}
	return nil
}

// remove forgets one output, its record first (a reader then finds
// nothing rather than a record without bytes).
func (s *Store) remove(ctx context.Context, k keptOutput) {
	_ = s.st.Delete(ctx, s.metaKey(k.URI, k.Owner))
	_ = store.DeleteBlob(ctx, s.st, s.dataPrefix(k.URI, k.Owner), k.Size)
}

func (s *Store) record(ctx context.Context, uri, owner string) (keptOutput, bool) {
	raw, err := s.st.Get(ctx, s.metaKey(uri, owner))
	if err != nil {
		return keptOutput{}, false
	}
	var k keptOutput
	if json.Unmarshal(raw, &k) != nil || k.Owner != owner || k.URI != uri {
		return keptOutput{}, false
	}
	return k, true
}

func (s *Store) records(ctx context.Context, prefix string) ([]keptOutput, error) {
	entries, err := s.st.List(ctx, prefix)
	if err != nil {
		return nil, err
	}
	out := make([]keptOutput, 0, len(entries))
	for _, e := range entries {
		var k keptOutput
		if json.Unmarshal(e.Value, &k) == nil {
			out = append(out, k)
		}
	}
	return out, nil
}

// Get returns the output kept under uri if owner's; another owner's output
// is as absent as one never kept. An error other than absence (the state
// store unreachable) is returned as such.
func (s *Store) Get(uri, owner string) ([]byte, bool) {
	data, err := s.Read(uri, owner)
	return data, err == nil
}

// Read is Get with the reason of a miss: [store.ErrNotFound] for an output
// that is not there (or not owner's), another error when the state store
// could not answer.
func (s *Store) Read(uri, owner string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	raw, err := s.st.Get(ctx, s.metaKey(uri, owner))
	if err != nil {
		return nil, err
	}
	var k keptOutput
	if json.Unmarshal(raw, &k) != nil || k.Owner != owner || k.URI != uri || !s.live(k) {
		return nil, store.ErrNotFound
	}
	data, err := store.GetBlob(ctx, s.st, s.dataPrefix(uri, owner), k.Size)
	if errors.Is(err, store.ErrNotFound) {
		return nil, store.ErrNotFound
	}
	return data, err
}

// owned returns owner's live outputs, oldest first.
func (s *Store) owned(owner string) []keptOutput {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	all, err := s.records(ctx, s.ownerPrefix(owner))
	if err != nil {
		return nil
	}
	all = slices.DeleteFunc(all, func(k keptOutput) bool { return k.Owner != owner || !s.live(k) })
	slices.SortStableFunc(all, func(a, b keptOutput) int { return a.Created.Compare(b.Created) })
	return all
}

// List returns the URIs kept for owner, oldest first.
func (s *Store) List(owner string) []string {
	var out []string
	for _, k := range s.owned(owner) {
		out = append(out, k.URI)
	}
	return out
}

// Bytes returns the bytes kept for owner.
func (s *Store) Bytes(owner string) int {
	n := 0
	for _, k := range s.owned(owner) {
		n += k.Size
	}
	return n
}
