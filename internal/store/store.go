// Package store holds the server's state that must outlive one process and
// be shared by every replica: sessions, executions, tasks, outputs,
// artifacts and which replica holds which live sandbox link. Two real
// implementations sit behind [Store]: an embedded file-backed store under
// the server's data directory (the default, one server per directory) and
// etcd v3 (several replicas behind one address). [Memory] backs the fast
// unit tests only.
//
// A Store is a flat map from keys to byte values. Keys are slash-separated
// paths whose first segment names the kind of record ("executions/",
// "tasks/", ...); values are whatever the owning package encodes (JSON).
// Every write returns only once it is durable: a handle a client has been
// told about can be read by its id from any replica at once.
package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"
)

// ErrNotFound is returned for a key that holds nothing (or whose TTL has
// passed).
var ErrNotFound = errors.New("store: not found")

// ErrExists is returned by Create for a key that already holds a value.
var ErrExists = errors.New("store: key exists")

// ErrUnavailable wraps every error of a store that cannot be reached (etcd
// down, the data file closed): callers tell it from a missing key.
var ErrUnavailable = errors.New("store: unavailable")

// Entry is one key and its value.
type Entry struct {
	Key   string
	Value []byte
}

// Store is the state shared by the server's replicas.
type Store interface {
	// Get returns the value under key, or ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Put stores value under key, replacing what was there. A ttl above
	// zero makes the key expire that long after the write (a replica's
	// heartbeat, a finished execution's retention); zero keeps it until
	// it is deleted.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Create stores value under key only if the key holds nothing, else
	// returns ErrExists: the primitive of claims (a quota's place, a
	// sandbox link) that two replicas must not both win.
	Create(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// Update reads key, calls fn with its value (nil when absent) and
	// stores what fn returns, atomically: no other write to key happens in
	// between (implementations retry fn when one raced). fn returning
	// (nil, nil) deletes the key; an error from fn aborts and is returned.
	// The key keeps its TTL unless ttl is above zero.
	Update(ctx context.Context, key string, ttl time.Duration, fn func(old []byte) ([]byte, error)) error
	// Delete removes key; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List returns every live entry whose key starts with prefix, in key
	// order.
	List(ctx context.Context, prefix string) ([]Entry, error)
	// Describe names the store for logs and doctor: "embedded
	// /var/lib/.../state.db", "etcd https://a:2379,https://b:2379".
	Describe() string
	// Close releases the store (the embedded store's file lock).
	Close() error
}

// Shared is implemented by stores that several server processes share
// (etcd): state that one process could keep in memory, such as a
// principal's runs in flight, must then be kept in the store.
type Shared interface {
	Shared() bool
}

// IsShared reports whether st is shared by several server processes.
func IsShared(st Store) bool {
	s, ok := st.(Shared)
	return ok && s.Shared()
}

// idKey holds the store's identity (ID).
const idKey = "store/id"

// ID returns st's identity: a random name that the first server to ask
// writes into it and every later one, of any replica, reads back. It tells
// the sandboxes that live sessions recorded in st may own from those of
// another store's sessions on the same host (sandbox.Keep).
func ID(ctx context.Context, st Store) (string, error) {
	var r [12]byte
	_, _ = rand.Read(r[:])
	err := st.Create(ctx, idKey, []byte(hex.EncodeToString(r[:])), 0)
	if err != nil && !errors.Is(err, ErrExists) {
		return "", fmt.Errorf("writing the state store's identity: %w", err)
	}
	id, err := st.Get(ctx, idKey)
	if err != nil {
		return "", fmt.Errorf("reading the state store's identity: %w", err)
	}
	return string(id), nil
}
