package store

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a Store in this process's memory. It backs the fast unit tests
// of the packages above the store; the server never uses it, since nothing
// in it outlives the process.
type Memory struct {
	mu   sync.Mutex
	now  func() time.Time
	data map[string]memValue
}

type memValue struct {
	value   []byte
	expires time.Time // zero: never
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{now: time.Now, data: map[string]memValue{}} }

func (m *Memory) liveLocked(key string) (memValue, bool) {
	v, ok := m.data[key]
	if ok && !v.expires.IsZero() && !m.now().Before(v.expires) {
		delete(m.data, key)
		return memValue{}, false
	}
	return v, ok
}

func (m *Memory) expiry(ttl time.Duration) time.Time {
	if ttl <= 0 {
		return time.Time{}
	}
	return m.now().Add(ttl)
}

// Get implements Store.
func (m *Memory) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.liveLocked(key)
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v.value...), nil
}

// Put implements Store.
func (m *Memory) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.data[key] = memValue{value: append([]byte(nil), value...), expires: m.expiry(ttl)}
	return nil
}

// Create implements Store.
func (m *Memory) Create(_ context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.liveLocked(key); ok {
		return ErrExists
	}
	m.data[key] = memValue{value: append([]byte(nil), value...), expires: m.expiry(ttl)}
	return nil
}

// Update implements Store.
func (m *Memory) Update(_ context.Context, key string, ttl time.Duration, fn func(old []byte) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	old, ok := m.liveLocked(key)
	var oldValue []byte
	if ok {
		oldValue = append([]byte(nil), old.value...)
	}
	next, err := fn(oldValue)
	if err != nil {
		return err
	}
	if next == nil {
		delete(m.data, key)
		return nil
	}
	expires := old.expires
	if ttl > 0 {
		expires = m.expiry(ttl)
	}
	m.data[key] = memValue{value: append([]byte(nil), next...), expires: expires}
	return nil
}

// Delete implements Store.
func (m *Memory) Delete(_ context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.data, key)
	return nil
}

// List implements Store.
func (m *Memory) List(_ context.Context, prefix string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Entry
	for k := range m.data {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		if v, ok := m.liveLocked(k); ok {
			out = append(out, Entry{Key: k, Value: append([]byte(nil), v.value...)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out, nil
}

// Describe implements Store.
func (m *Memory) Describe() string { return "memory (tests only)" }

// Close implements Store.
func (m *Memory) Close() error { return nil }
