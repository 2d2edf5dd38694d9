package store

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
)

// The etcd store: every key under one prefix of an etcd v3 cluster, shared
// by every replica. A TTL is an etcd lease granted for the write (etcd
// deletes the key when the lease expires; leases have a granularity of
// seconds and a minimum of about 2 s). Create is a transaction on the
// key's CreateRevision being 0; Update reads the key and writes it in a
// transaction on its ModRevision, retrying when another write came in
// between.
//
// etcd refuses a request above --max-request-bytes (1.5 MiB by default),
// so no value may come near it: large bytes (full outputs, artifacts) are
// stored as chunks of ChunkSize through PutBlob and GetBlob, on every
// store alike.

// Etcd is the Store on an etcd v3 cluster.
type Etcd struct {
	cli       *clientv3.Client
	prefix    string
	endpoints []string
	timeout   time.Duration
	closed    atomic.Bool
}

// OpenEtcd connects to the cluster of cfg and checks that it answers
// within the dial timeout: an unreachable etcd is an error that wraps
// ErrUnavailable, and the server stops on it.
func OpenEtcd(cfg config.Etcd) (*Etcd, error) {
	timeout := time.Duration(cfg.DialTimeoutSeconds) * time.Second
	if timeout <= 0 {
		timeout = 5 * time.Second
	}
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("the etcd store needs store.etcd.endpoints")
	}
	tlsConfig, err := etcdTLS(cfg)
	if err != nil {
		return nil, err
	}
	password, err := etcdPassword(cfg)
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:   cfg.Endpoints,
		DialTimeout: timeout,
		TLS:         tlsConfig,
		Username:    cfg.Username,
		Password:    password,
		// The client's own logs (gRPC reconnects) would repeat what the
		// errors of the calls say.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return nil, fmt.Errorf("%w: etcd at %s: %v; check store.etcd.endpoints", ErrUnavailable, strings.Join(cfg.Endpoints, ","), err)
	}
	e := &Etcd{cli: cli, prefix: cfg.Prefix, endpoints: cfg.Endpoints, timeout: timeout}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if _, err := cli.Get(ctx, e.prefix, clientv3.WithCountOnly()); err != nil {
		_ = cli.Close()
		if errors.Is(err, rpctypes.ErrAuthFailed) || errors.Is(err, rpctypes.ErrPermissionDenied) || errors.Is(err, rpctypes.ErrUserEmpty) {
			return nil, fmt.Errorf("etcd at %s refused this server: %v; check store.etcd.username, its password and its role's permissions on %q", strings.Join(cfg.Endpoints, ","), err, e.prefix)
		}
		return nil, fmt.Errorf("%w: etcd at %s did not answer within %s: %v; start etcd, or correct store.etcd.endpoints and its TLS settings", ErrUnavailable, strings.Join(cfg.Endpoints, ","), timeout, err)
	}
	return e, nil
}

// etcdTLS returns the TLS configuration of cfg, or nil for plain
// connections.
func etcdTLS(cfg config.Etcd) (*tls.Config, error) {
	if cfg.CAFile == "" && cfg.CertFile == "" && cfg.ServerName == "" {
		return nil, nil
	}
	t := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: cfg.ServerName}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store.etcd.ca_file: %w", err)
		}
		t.RootCAs = x509.NewCertPool()
		if !t.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store.etcd.ca_file %s holds no PEM certificate", cfg.CAFile)
		}
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store.etcd.cert_file and key_file: %w", err)
		}
		t.Certificates = []tls.Certificate{cert}
	}
	return t, nil
}

// etcdPassword reads the password from its file or variable.
func etcdPassword(cfg config.Etcd) (string, error) {
	switch {
	case cfg.PasswordFile != "":
		data, err := os.ReadFile(cfg.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("store.etcd.password_file: %w", err)
		}
		return strings.TrimRight(string(data), "\r\n"), nil
	case cfg.PasswordEnv != "":
		p := os.Getenv(cfg.PasswordEnv)
		if p == "" {
			return "", fmt.Errorf("store.etcd.password_env names %s, which is not set", cfg.PasswordEnv)
		}
		return p, nil
	}
	return "", nil
}

// call runs op with the request timeout, and tells an unreachable or
// closed etcd (ErrUnavailable) from the caller's own context ending.
func (e *Etcd) call(ctx context.Context, op func(ctx context.Context) error) error {
	if e.closed.Load() {
		return fmt.Errorf("%w: etcd store closed", ErrUnavailable)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	rctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	err := op(rctx)
	if err == nil || errors.Is(err, ErrNotFound) || errors.Is(err, ErrExists) || errors.Is(err, ErrUnavailable) {
		return err
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if e.closed.Load() || unreachable(err) {
		return fmt.Errorf("%w: etcd at %s: %v", ErrUnavailable, strings.Join(e.endpoints, ","), err)
	}
	return err
}

func unreachable(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTimeout) {
		return true
	}
	if s, ok := status.FromError(err); ok {
		switch s.Code() {
		case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled:
			return true
		}
	}
	return false
}

func (e *Etcd) key(k string) string { return e.prefix + k }

// Shared reports that several servers share an etcd store ([Shared]).
func (e *Etcd) Shared() bool { return true }

// lease grants a lease of ttl rounded up to whole seconds, or returns no
// lease for a ttl of 0.
func (e *Etcd) lease(ctx context.Context, ttl time.Duration) (clientv3.LeaseID, error) {
	if ttl <= 0 {
		return clientv3.NoLease, nil
	}
	secs := int64((ttl + time.Second - 1) / time.Second)
	l, err := e.cli.Grant(ctx, secs)
	if err != nil {
		return clientv3.NoLease, err
	}
	return l.ID, nil
}

// revoke drops a lease that no key took, so that it does not linger until
// its TTL.
func (e *Etcd) revoke(id clientv3.LeaseID) {
	if id == clientv3.NoLease {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), e.timeout)
	defer cancel()
	_, _ = e.cli.Revoke(ctx, id)
}

func putOpts(id clientv3.LeaseID) []clientv3.OpOption {
	if id == clientv3.NoLease {
		return nil
	}
	return []clientv3.OpOption{clientv3.WithLease(id)}
}

// value returns a key's value, empty rather than nil when it is empty.
func value(v []byte) []byte {
	if v == nil {
		return []byte{}
	}
	return v
}

// Get implements Store.
func (e *Etcd) Get(ctx context.Context, key string) ([]byte, error) {
	var out []byte
	err := e.call(ctx, func(ctx context.Context) error {
		resp, err := e.cli.Get(ctx, e.key(key))
		if err != nil {
			return err
		}
		if len(resp.Kvs) == 0 {
			return ErrNotFound
		}
		out = value(resp.Kvs[0].Value)
		return nil
	})
	return out, err
}

// Put implements Store.
func (e *Etcd) Put(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return e.call(ctx, func(ctx context.Context) error {
		id, err := e.lease(ctx, ttl)
		if err != nil {
			return err
		}
		if _, err := e.cli.Put(ctx, e.key(key), string(v), putOpts(id)...); err != nil {
			e.revoke(id)
			return err
		}
		return nil
	})
}

// Create implements Store.
func (e *Etcd) Create(ctx context.Context, key string, v []byte, ttl time.Duration) error {
	if err := checkKey(key); err != nil {
		return err
	}
	return e.call(ctx, func(ctx context.Context) error {
		id, err := e.lease(ctx, ttl)
		if err != nil {
			return err
		}
		k := e.key(key)
		resp, err := e.cli.Txn(ctx).
			If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
			Then(clientv3.OpPut(k, string(v), putOpts(id)...)).
			Commit()
		if err != nil || !resp.Succeeded {
			e.revoke(id)
		}
		if err != nil {
			return err
		}
		if !resp.Succeeded {
			return ErrExists
		}
		return nil
	})
}

// Update implements Store: a read, fn, and a write on the condition that
// the key has not changed since the read; when it has, all again.
func (e *Etcd) Update(ctx context.Context, key string, ttl time.Duration, fn func(old []byte) ([]byte, error)) error {
	if err := checkKey(key); err != nil {
		return err
	}
	k := e.key(key)
	for {
		done := false
		err := e.call(ctx, func(ctx context.Context) error {
			resp, err := e.cli.Get(ctx, k)
			if err != nil {
				return err
			}
			var old []byte
			unchanged := clientv3.Compare(clientv3.CreateRevision(k), "=", 0)
			keep := clientv3.NoLease
			if len(resp.Kvs) > 0 {
				kv := resp.Kvs[0]
				old = value(kv.Value)
				unchanged = clientv3.Compare(clientv3.ModRevision(k), "=", kv.ModRevision)
				keep = clientv3.LeaseID(kv.Lease)
			}
			next, err := fn(old)
			if err != nil {
				done = true
				return err
			}
			var write clientv3.Op
			id := keep
			switch {
			case next == nil && old == nil:
				done = true
				return nil
			case next == nil:
				write = clientv3.OpDelete(k)
			default:
				if ttl > 0 {
					if id, err = e.lease(ctx, ttl); err != nil {
						return err
					}
				}
				write = clientv3.OpPut(k, string(next), putOpts(id)...)
			}
			txn, err := e.cli.Txn(ctx).If(unchanged).Then(write).Commit()
			granted := id != keep
			switch {
			case errors.Is(err, rpctypes.ErrLeaseNotFound):
				// The key's lease expired between the read and the
				// write: the key is gone; read again.
				return nil
			case err != nil:
				if granted {
					e.revoke(id)
				}
				return err
			case !txn.Succeeded:
				if granted {
					e.revoke(id)
				}
				return nil
			}
			done = true
			return nil
		})
		if err != nil || done {
			return err
		}
	}
}

// Delete implements Store.
func (e *Etcd) Delete(ctx context.Context, key string) error {
	return e.call(ctx, func(ctx context.Context) error {
		_, err := e.cli.Delete(ctx, e.key(key))
		return err
	})
}

// List implements Store.
func (e *Etcd) List(ctx context.Context, prefix string) ([]Entry, error) {
	var out []Entry
	err := e.call(ctx, func(ctx context.Context) error {
		resp, err := e.cli.Get(ctx, e.key(prefix), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByKey, clientv3.SortAscend))
		if err != nil {
			return err
		}
		out = make([]Entry, 0, len(resp.Kvs))
		for _, kv := range resp.Kvs {
			out = append(out, Entry{Key: strings.TrimPrefix(string(kv.Key), e.prefix), Value: value(kv.Value)})
		}
		return nil
	})
	return out, err
}

// Describe implements Store.
func (e *Etcd) Describe() string {
	return fmt.Sprintf("etcd %s (prefix %q)", strings.Join(e.endpoints, ","), e.prefix)
}

// Close implements Store.
func (e *Etcd) Close() error {
	if e.closed.Swap(true) {
		return nil
	}
	return e.cli.Close()
}
