package engine

import (
	"bytes"
	"fmt"
	"sync"
	"time"
)

// OutputURIPrefix begins the URI of every kept output.
const OutputURIPrefix = "mcr://runs/"

// OutputURI returns the resource URI of one stream of one stage of a run.
func OutputURI(runID, stage, stream string) string {
	if stage == "run" {
		return fmt.Sprintf("%s%s/%s", OutputURIPrefix, runID, stream)
	}
	return fmt.Sprintf("%s%s/%s/%s", OutputURIPrefix, runID, stage, stream)
}

type keptOutput struct {
	data    []byte
	created time.Time
}

// OutputStore keeps full outputs that did not fit inline, for a while and up
// to a total size; the oldest go first.
type OutputStore struct {
	mu       sync.Mutex
	items    map[string]keptOutput
	order    []string // URIs, oldest first
	total    int
	maxBytes int
	ttl      time.Duration
	now      func() time.Time
}

// NewOutputStore returns a store of at most maxBytes keeping outputs for ttl.
func NewOutputStore(maxBytes int, ttl time.Duration) *OutputStore {
	return &OutputStore{items: map[string]keptOutput{}, maxBytes: maxBytes, ttl: ttl, now: time.Now}
}

// Put keeps data under uri.
func (s *OutputStore) Put(uri string, data []byte) {
	// A copy, cut to the store's size: keeping a slice would pin whatever
	// larger buffer it came from for the whole retention.
	data = bytes.Clone(data[:min(len(data), s.maxBytes)])
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.items[uri]; ok {
		s.total -= len(old.data)
	} else {
		s.order = append(s.order, uri)
	}
	s.items[uri] = keptOutput{data: data, created: s.now()}
	s.total += len(data)
	s.evictLocked()
}

// Get returns the output kept under uri.
func (s *OutputStore) Get(uri string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	it, ok := s.items[uri]
	return it.data, ok
}

// List returns the URIs kept, oldest first.
func (s *OutputStore) List() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.evictLocked()
	return append([]string(nil), s.order...)
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
		delete(s.items, uri)
	}
}
