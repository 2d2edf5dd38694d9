package engine

import (
	"bytes"
	"fmt"
	"slices"
	"sync"
	"time"
)

// OutputURIPrefix begins the URI of every kept output.
const OutputURIPrefix = "mcr://runs/"

// OutputURI returns the resource URI of one stream of one stage of a run.
// The run id is 64 random bits: a URI cannot be guessed, and the store
// answers only the principal that made the run in any case.
func OutputURI(runID, stage, stream string) string {
	if stage == "run" {
		return fmt.Sprintf("%s%s/%s", OutputURIPrefix, runID, stream)
	}
	return fmt.Sprintf("%s%s/%s/%s", OutputURIPrefix, runID, stage, stream)
}

type keptOutput struct {
	data    []byte
	owner   string
	created time.Time
}

// OutputStore keeps full outputs that did not fit inline, for a while and up
// to a total size; the oldest go first. Each output belongs to the principal
// whose run made it: only that principal reads or lists it, and with an
// owner quota a principal's outputs past it push out its own oldest ones,
// never another principal's.
type OutputStore struct {
	mu         sync.Mutex
	items      map[string]keptOutput
	order      []string // URIs, oldest first
	total      int
	maxBytes   int
	ownerMax   int // 0: no per-owner quota
	ownerBytes map[string]int
	ttl        time.Duration
	now        func() time.Time
}

// NewOutputStore returns a store of at most maxBytes keeping outputs for
// ttl, and at most ownerMax bytes per owner (0: no per-owner quota).
func NewOutputStore(maxBytes, ownerMax int, ttl time.Duration) *OutputStore {
	return &OutputStore{items: map[string]keptOutput{}, ownerBytes: map[string]int{}, maxBytes: maxBytes, ownerMax: ownerMax, ttl: ttl, now: time.Now}
}

// Put keeps data under uri for owner.
func (s *OutputStore) Put(uri, owner string, data []byte) {
	limit := s.maxBytes
	if s.ownerMax > 0 {
		limit = min(limit, s.ownerMax)
	}
	// A copy, cut to the store's size: keeping a slice would pin whatever
	// larger buffer it came from for the whole retention.
	data = bytes.Clone(data[:min(len(data), limit)])
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.items[uri]; ok {
		s.removeLocked(uri)
	}
	s.order = append(s.order, uri)
	s.items[uri] = keptOutput{data: data, owner: owner, created: s.now()}
	s.total += len(data)
	s.ownerBytes[owner] += len(data)
	for s.ownerMax > 0 && s.ownerBytes[owner] > s.ownerMax {
		i := slices.IndexFunc(s.order, func(u string) bool { return s.items[u].owner == owner })
		s.removeLocked(s.order[i])
	}
	s.evictLocked()
}

// Get returns the output kept under uri if owner's; another owner's output
// is as absent as one never kept.
func (s *OutputStore) Get(uri, owner string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	it, ok := s.items[uri]
	if !ok || it.owner != owner {
		return nil, false
	}
	return it.data, true
}

// List returns the URIs kept for owner, oldest first.
func (s *OutputStore) List(owner string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	var out []string
	for _, uri := range s.order {
		if s.items[uri].owner == owner {
			out = append(out, uri)
		}
	}
	return out
}

// Bytes returns the bytes kept for owner.
func (s *OutputStore) Bytes(owner string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	return s.ownerBytes[owner]
}

func (s *OutputStore) removeLocked(uri string) {
	it := s.items[uri]
	delete(s.items, uri)
	s.order = slices.DeleteFunc(s.order, func(u string) bool { return u == uri })
	s.total -= len(it.data)
	if s.ownerBytes[it.owner] -= len(it.data); s.ownerBytes[it.owner] <= 0 {
		delete(s.ownerBytes, it.owner)
	}
}

func (s *OutputStore) evictLocked() {
	cutoff := s.now().Add(-s.ttl)
	for len(s.order) > 0 {
		uri := s.order[0]
		it := s.items[uri]
		if s.total <= s.maxBytes && it.created.After(cutoff) {
			return
		}
		s.order = s.order[1:]
		s.total -= len(it.data)
		if s.ownerBytes[it.owner] -= len(it.data); s.ownerBytes[it.owner] <= 0 {
			delete(s.ownerBytes, it.owner)
		}
		delete(s.items, uri)
	}
}
