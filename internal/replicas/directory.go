// Package replicas is what the servers sharing one state store know of
// each other, and the one place that writes or reads their shared keys:
//
//   - the heartbeat (heartbeat.go): each server's key under "replicas/",
//     refreshed while it runs; a server whose key expired is gone;
//   - takeover (takeover.go): the records a gone server held (its
//     executions, its sessions) are orphans, and a survivor claims each
//     with an atomic update, so of two survivors one wins;
//   - forwarding (directory.go, forward.go): a session's sandbox is held
//     by the replica that made it (its agent link is a connection to that
//     process), so a call for it that arrives at another replica is
//     forwarded to its holder. Each replica advertises, under
//     "peers/<replica>", the URL at which it serves forwarded calls
//     ([Path]); every forwarded call carries a key that only servers
//     holding the store can read ("peers-key", made by the first replica),
//     and the holder runs the call as the principal the caller
//     authenticated, exactly as if it had arrived there. A forwarded
//     call's answer is a stream of JSON lines: the output of a run as it
//     arrives ({"chunk": ...}), then the result ({"result": ...}) or an
//     error ({"error": {"code", "message"}}), so a run through another
//     replica still streams its progress;
//   - the shared quota (quota.go): a principal's runs in flight counted
//     across every server, one key under "quota/runs/" per run.
//
// On the embedded store one server holds the state alone: the heartbeat
// still marks it, and the rest is not used.
package replicas

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

const (
	// Path is where a replica serves forwarded calls, beside /mcp.
	Path = "/internal/v1/forward"
	// dirPrefix holds each live replica's advertised URL.
	dirPrefix = "peers/"
	// keyKey holds the key forwarded calls carry.
	keyKey = "peers-key"
	// entryTTL and refreshEvery keep a replica's entry while it lives,
	// like its heartbeat.
	entryTTL     = 15 * time.Second
	refreshEvery = 5 * time.Second
	// keyHeader carries the key.
	keyHeader = "X-Mcr-Peer-Key"
	// maxRequestBytes bounds a forwarded call's body: a run's code, stdin
	// and files, which the MCP transport bounded already.
	maxRequestBytes = 64 << 20
)

// Directory is this replica's membership among its peers: it advertises
// this replica's URL and forwards calls to the others.
type Directory struct {
	st     store.Store
	self   string
	url    string
	key    string
	client *http.Client
	log    *slog.Logger
	stop   chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

// Join reads (or, for the first replica, makes) the peers' key and
// advertises url, the base URL at which the others reach this replica
// (http://10.0.0.5:8080), under self's name until Close.
func Join(ctx context.Context, st store.Store, self, url string, log *slog.Logger) (*Directory, error) {
	if url == "" {
		return nil, errors.New("no URL to advertise to the other replicas")
	}
	key, err := sharedKey(ctx, st)
	if err != nil {
		return nil, fmt.Errorf("reading the replicas' forwarding key from the state store: %w", err)
	}
	d := &Directory{st: st, self: self, url: url, key: key, log: log, stop: make(chan struct{}),
		client: &http.Client{Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 16, IdleConnTimeout: time.Minute}}}
	if err := d.advertise(ctx); err != nil {
		return nil, fmt.Errorf("advertising this replica to the others: %w", err)
	}
	d.wg.Add(1)
	go d.refresh(context.WithoutCancel(ctx))
	return d, nil
}

// sharedKey returns the key every replica's forwarded calls carry, making
// it if no replica has yet (Create: two first replicas cannot both win).
func sharedKey(ctx context.Context, st store.Store) (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	err := st.Create(ctx, keyKey, []byte(hex.EncodeToString(b[:])), 0)
	if err != nil && !errors.Is(err, store.ErrExists) {
		return "", err
	}
	v, err := st.Get(ctx, keyKey)
	if err != nil {
		return "", err
	}
	return string(v), nil
}

type entry struct {
	URL string `json:"url"`
}

func (d *Directory) advertise(ctx context.Context) error {
	b, _ := json.Marshal(entry{URL: d.url})
	return d.st.Put(ctx, dirPrefix+d.self, b, entryTTL)
}

func (d *Directory) refresh(base context.Context) {
	defer d.wg.Done()
	t := time.NewTicker(refreshEvery)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
		ctx, cancel := context.WithTimeout(base, refreshEvery)
		if err := d.advertise(ctx); err != nil {
			d.log.Warn("this replica's address was not refreshed in the state store; the others cannot forward to it meanwhile", "err", err)
		}
		cancel()
	}
}

// Close stops advertising this replica and removes its entry.
func (d *Directory) Close() {
	d.once.Do(func() {
		close(d.stop)
		d.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = d.st.Delete(ctx, dirPrefix+d.self)
	})
}

// Self is this replica's name.
func (d *Directory) Self() string { return d.self }

// ErrGone is returned for a replica that advertises no URL: it stopped
// (its entry expired) or never served forwarded calls.
var ErrGone = errors.New("the replica is gone")

// urlOf returns replica's advertised URL.
func (d *Directory) urlOf(ctx context.Context, replica string) (string, error) {
	v, err := d.st.Get(ctx, dirPrefix+replica)
	if errors.Is(err, store.ErrNotFound) {
		return "", ErrGone
	}
	if err != nil {
		return "", err
	}
	var e entry
	if err := json.Unmarshal(v, &e); err != nil || e.URL == "" {
		return "", fmt.Errorf("replica %s's entry in the state store is unreadable: %v", replica, err)
	}
	return e.URL, nil
}
