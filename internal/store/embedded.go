package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// The embedded store is one bbolt file, state.db, in the data directory.
// bbolt rather than SQLite: it is pure Go (no cgo, so the static binary
// and every GOOS build stay as they are), small, a plain ordered key/value
// map like the Store interface, and it holds an exclusive file lock on its
// one file, which is what refuses a second server on the same directory.
// Every write transaction is fsynced before it returns (bbolt's default).

// StateFile is the embedded store's file in the data directory.
const StateFile = "state.db"

// The format marker: a "meta" bucket holding the format's name and
// version, written when the file is created. A file without it is not ours
// and is never written to; a newer version is refused rather than misread.
const (
	formatName    = "mcp-code-runner state"
	formatVersion = 1
)

var (
	metaBucket    = []byte("meta")
	dataBucket    = []byte("data")
	expiresBucket = []byte("expires")
	formatKey     = []byte("format")
	versionKey    = []byte("version")
)

// ErrDataDirInUse is returned by OpenEmbedded when another process holds
// the data directory's state file.
var ErrDataDirInUse = errors.New("data directory in use")

// ErrNotStateStore is returned by OpenEmbedded for a state file that is not
// this server's store (not a bbolt file, another program's bbolt file, or a
// newer format): it is left as it is.
var ErrNotStateStore = errors.New("not an mcp-code-runner state store")

// EmbeddedOptions tunes an embedded store; the zero value is what the
// server uses.
type EmbeddedOptions struct {
	// LockTimeout bounds the wait for the state file's lock; 0 means 1 s.
	LockTimeout time.Duration
	// SweepInterval is how often expired entries are removed from the file
	// (they are invisible from their expiry on); 0 means 1 min.
	SweepInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Embedded is the file-backed Store under one data directory, for a single
// server. Values carry their expiry; an index of expiries lets the sweep
// remove expired entries without reading every value.
type Embedded struct {
	db   *bolt.DB
	path string
	now  func() time.Time

	stop     chan struct{}
	sweeping sync.WaitGroup
	closeMu  sync.Once
	closeErr error
}

// OpenEmbedded opens (creating when needed) the store in dir. The directory
// is made 0700 and the file 0600: the state holds every client's results.
func OpenEmbedded(dir string, opts EmbeddedOptions) (*Embedded, error) {
	if opts.LockTimeout <= 0 {
		opts.LockTimeout = time.Second
	}
	if opts.SweepInterval <= 0 {
		opts.SweepInterval = time.Minute
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if dir == "" {
		return nil, errors.New("the embedded store needs a data directory (data_dir)")
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data directory %s: %w; set data_dir to a directory this server may create and write", dir, err)
	}
	if fi, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("data directory %s is not a directory; set data_dir to a directory", dir)
	}
	path := filepath.Join(dir, StateFile)
	fresh := true
	if fi, err := os.Stat(path); err == nil {
		if !fi.Mode().IsRegular() {
			return nil, refuse(ErrNotStateStore, "%s is not a regular file; move it away or give this server another data_dir", path)
		}
		// An empty file holds nothing to lose: bbolt initialises it.
		fresh = fi.Size() == 0
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("data directory %s: %w", dir, err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: opts.LockTimeout})
	switch {
	case errors.Is(err, bolterrors.ErrTimeout):
		return nil, refuse(ErrDataDirInUse, "data directory %s is in use by another mcp-code-runner server; give each server its own data_dir, or use the etcd store for replicas", dir)
	case errors.Is(err, bolterrors.ErrInvalid), errors.Is(err, bolterrors.ErrVersionMismatch), errors.Is(err, bolterrors.ErrChecksum):
		return nil, refuse(ErrNotStateStore, "%s is not a state file this server can read (%v); it is left untouched: move it away or give this server another data_dir", path, err)
	case err != nil:
		return nil, fmt.Errorf("opening the state file %s: %w", path, err)
	}
	if err := checkFormat(db, path, fresh); err != nil {
		_ = db.Close()
		return nil, err
	}
	e := &Embedded{db: db, path: path, now: opts.Now, stop: make(chan struct{})}
	e.sweeping.Add(1)
	go e.sweepLoop(opts.SweepInterval)
	return e, nil
}

// checkFormat writes the format marker into a new file, and checks it in an
// existing one. A bbolt file with no bucket at all is new too (bbolt made
// it but the marker was never written): it holds nothing to lose.
func checkFormat(db *bolt.DB, path string, fresh bool) error {
	return db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(metaBucket)
		if meta == nil {
			empty := true
			_ = tx.ForEach(func([]byte, *bolt.Bucket) error { empty = false; return nil })
			if !fresh && !empty {
				return refuse(ErrNotStateStore, "%s is a bbolt file of another program (it has no %q marker); it is left untouched: move it away or give this server another data_dir", path, formatName)
			}
			return initFormat(tx)
		}
		name := string(meta.Get(formatKey))
		version, err := strconv.Atoi(string(meta.Get(versionKey)))
		switch {
		case name != formatName || err != nil:
			return refuse(ErrNotStateStore, "%s is a bbolt file of another program (format %q); it is left untouched: move it away or give this server another data_dir", path, name)
		case version > formatVersion:
			return refuse(ErrNotStateStore, "%s has format version %d, newer than this server's %d: run the newer server on it, or give this one another data_dir", path, version, formatVersion)
		}
		for _, b := range [][]byte{dataBucket, expiresBucket} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
}

func initFormat(tx *bolt.Tx) error {
	meta, err := tx.CreateBucket(metaBucket)
	if err != nil {
		return err
	}
	if err := meta.Put(formatKey, []byte(formatName)); err != nil {
		return err
	}
	if err := meta.Put(versionKey, []byte(strconv.Itoa(formatVersion))); err != nil {
		return err
	}
	for _, b := range [][]byte{dataBucket, expiresBucket} {
		if _, err := tx.CreateBucket(b); err != nil {
			return err
		}
	}
	return nil
}

// A stored value is its expiry (Unix nanoseconds, big-endian; 0 for never)
// followed by the caller's bytes. The expires bucket indexes the same
// expiries as expiry+key, so the sweep reads only what has expired.

func encodeValue(expires int64, value []byte) []byte {
	out := make([]byte, 8+len(value))
	binary.BigEndian.PutUint64(out, uint64(expires))
	copy(out[8:], value)
	return out
}

func decodeValue(raw []byte) (expires int64, value []byte) {
	if len(raw) < 8 {
		return 0, nil
	}
	return int64(binary.BigEndian.Uint64(raw)), raw[8:]
}

func expiryIndexKey(expires int64, key []byte) []byte {
	out := make([]byte, 8+len(key))
	binary.BigEndian.PutUint64(out, uint64(expires))
	copy(out[8:], key)
	return out
}

func (e *Embedded) expiry(ttl time.Duration) int64 {
	if ttl <= 0 {
		return 0
	}
	return e.now().Add(ttl).UnixNano()
}

func (e *Embedded) live(expires int64) bool {
	return expires == 0 || e.now().UnixNano() < expires
}

// getLive returns key's value in tx and its expiry, or ok false when it is
// absent or expired. The value is a copy: bbolt's bytes are valid only
// within the transaction.
func (e *Embedded) getLive(tx *bolt.Tx, key []byte) (value []byte, expires int64, ok bool) {
	raw := tx.Bucket(dataBucket).Get(key)
	if raw == nil {
		return nil, 0, false
	}
	expires, v := decodeValue(raw)
	if !e.live(expires) {
		return nil, 0, false
	}
	return bytes.Clone(v), expires, true
}

// putLocked writes key in tx, keeping the expiry index in step.
func putLocked(tx *bolt.Tx, key, value []byte, expires int64) error {
	if err := deleteLocked(tx, key); err != nil {
		return err
	}
	if expires != 0 {
		if err := tx.Bucket(expiresBucket).Put(expiryIndexKey(expires, key), nil); err != nil {
			return err
		}
	}
	return tx.Bucket(dataBucket).Put(key, encodeValue(expires, value))
}

func deleteLocked(tx *bolt.Tx, key []byte) error {
	data := tx.Bucket(dataBucket)
	raw := data.Get(key)
	if raw == nil {
		return nil
	}
	if expires, _ := decodeValue(raw); expires != 0 {
		if err := tx.Bucket(expiresBucket).Delete(expiryIndexKey(expires, key)); err != nil {
			return err
		}
	}
	return data.Delete(key)
}

// unavailable wraps the errors of a closed database.
func (e *Embedded) unavailable(err error) error {
	if errors.Is(err, bolterrors.ErrDatabaseNotOpen) || errors.Is(err, bolterrors.ErrTxClosed) {
		return fmt.Errorf("%w: embedded store %s is closed", ErrUnavailable, e.path)
	}
	return err
}

func (e *Embedded) update(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.unavailable(e.db.Update(fn))
}

func (e *Embedded) view(ctx context.Context, fn func(tx *bolt.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.unavailable(e.db.View(fn))
}

// Get implements Store.
func (e *Embedded) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := e.view(ctx, func(tx *bolt.Tx) error {
		v, _, ok := e.getLive(tx, []byte(key))
		if !ok {
			return ErrNotFound
		}
		out = v
		return nil
	})
	return out, err
}

// Put implements Store.
func (e *Embedded) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return e.update(ctx, func(tx *bolt.Tx) error {
		return putLocked(tx, []byte(key), value, e.expiry(ttl))
	})
}

// Create implements Store.
func (e *Embedded) Create(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return e.update(ctx, func(tx *bolt.Tx) error {
		if _, _, ok := e.getLive(tx, []byte(key)); ok {
			return ErrExists
		}
		return putLocked(tx, []byte(key), value, e.expiry(ttl))
	})
}

// Update implements Store. bbolt runs one write transaction at a time, so
// fn sees the latest value and nothing writes between; fn must not call
// the store itself (it would wait for its own transaction).
func (e *Embedded) Update(ctx context.Context, key string, ttl time.Duration, fn func(old []byte) ([]byte, error)) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return e.update(ctx, func(tx *bolt.Tx) error {
		old, expires, _ := e.getLive(tx, []byte(key))
		next, err := fn(old)
		if err != nil {
			return err
		}
		if next == nil {
			return deleteLocked(tx, []byte(key))
		}
		if ttl > 0 {
			expires = e.expiry(ttl)
		}
		return putLocked(tx, []byte(key), next, expires)
	})
}

// Delete implements Store.
func (e *Embedded) Delete(ctx context.Context, key string) error {
	return e.update(ctx, func(tx *bolt.Tx) error { return deleteLocked(tx, []byte(key)) })
}

// List implements Store.
func (e *Embedded) List(ctx context.Context, prefix string) ([]Entry, error) {
	var out []Entry
	err := e.view(ctx, func(tx *bolt.Tx) error {
		c := tx.Bucket(dataBucket).Cursor()
		p := []byte(prefix)
		for k, raw := c.Seek(p); k != nil && bytes.HasPrefix(k, p); k, raw = c.Next() {
			expires, v := decodeValue(raw)
			if e.live(expires) {
				out = append(out, Entry{Key: string(k), Value: bytes.Clone(v)})
			}
		}
		return nil
	})
	return out, err
}

// Sweep removes the entries whose TTL has passed and returns how many; the
// store runs it periodically.
func (e *Embedded) Sweep(ctx context.Context) (int, error) {
	n := 0
	err := e.update(ctx, func(tx *bolt.Tx) error {
		now := e.now().UnixNano()
		index := tx.Bucket(expiresBucket)
		var expired [][]byte
		c := index.Cursor()
		for k, _ := c.First(); len(k) >= 8; k, _ = c.Next() {
			if int64(binary.BigEndian.Uint64(k)) > now {
				break
			}
			expired = append(expired, bytes.Clone(k))
		}
		data := tx.Bucket(dataBucket)
		for _, k := range expired {
			if err := index.Delete(k); err != nil {
				return err
			}
			// The index and the values are written together; the check
			// only guards a value rewritten with another expiry.
			if expires, _ := decodeValue(data.Get(k[8:])); expires != int64(binary.BigEndian.Uint64(k)) {
				continue
			}
			if err := data.Delete(k[8:]); err != nil {
				return err
			}
			n++
		}
		return nil
	})
	return n, err
}

func (e *Embedded) sweepLoop(every time.Duration) {
	defer e.sweeping.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-e.stop:
			return
		case <-t.C:
			_, _ = e.Sweep(context.Background())
		}
	}
}

// Describe implements Store.
func (e *Embedded) Describe() string { return "embedded " + e.path }

// Close implements Store: it stops the sweep and releases the file and its
// lock. Closing twice is not an error.
func (e *Embedded) Close() error {
	e.closeMu.Do(func() {
		close(e.stop)
		e.sweeping.Wait()
		e.closeErr = e.db.Close()
	})
	return e.closeErr
}

// checkKey refuses the keys no implementation can hold.
func checkKey(key string) error {
	if key == "" {
		return errors.New("store: empty key")
	}
	return nil
}

// refusal is an error of a kind (ErrDataDirInUse, ErrNotStateStore) whose
// message is the whole explanation.
type refusal struct {
	kind error
	msg  string
}

func refuse(kind error, format string, args ...any) error {
	return &refusal{kind: kind, msg: fmt.Sprintf(format, args...)}
}

func (r *refusal) Error() string { return r.msg }
func (r *refusal) Unwrap() error { return r.kind }
