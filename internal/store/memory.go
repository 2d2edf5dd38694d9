package store

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

// Memory is a Store in this process's memory. It backs the fast unit tests
// of the packages above the store; the server never uses it, since nothing
// in it outlives the process.
type Memory struct {
	mu     sync.Mutex
	now    func() time.Time
	data   map[string]memValue
	closed bool
}

type memValue struct {
	value   []byte
	expires time.Time // zero: never
}

// NewMemory returns an empty in-memory store.
func NewMemory() *Memory { return &Memory{now: time.Now, data: map[string]memValue{}} }

// checkLocked fails a call on a closed store or with a done context, as
// the real stores do.
func (m *Memory) checkLocked(ctx context.Context) error {
	if m.closed {
		return fmt.Errorf("%w: memory store closed", ErrUnavailable)
	}
	return ctx.Err()
}

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
func (m *Memory) Get(ctx context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return nil, err
	}
	v, ok := m.liveLocked(key)
	if !ok {
		return nil, ErrNotFound
	}
	return append([]byte(nil), v.value...), nil
}

// Put implements Store.
func (m *Memory) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return err
	}
	m.data[key] = memValue{value: append([]byte(nil), value...), expires: m.expiry(ttl)}
	return nil
}

// Create implements Store.
func (m *Memory) Create(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return err
	}
	if _, ok := m.liveLocked(key); ok {
		return ErrExists
	}
	m.data[key] = memValue{value: append([]byte(nil), value...), expires: m.expiry(ttl)}
	return nil
}

// Update implements Store.
func (m *Memory) Update(ctx context.Context, key string, ttl time.Duration, fn func(old []byte) ([]byte, error)) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return err
	}
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
func (m *Memory) Delete(ctx context.Context, key string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return err
	}
	delete(m.data, key)
	return nil
}

// List implements Store.
func (m *Memory) List(ctx context.Context, prefix string) ([]Entry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.checkLocked(ctx); err != nil {
		return nil, err
	}
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
func (m *Memory) Close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.closed = true
	return nil
}
