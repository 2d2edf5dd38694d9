// Package peers lets the replicas that share an etcd store reach each
// other. A session's sandbox is held by the replica that made it (its agent
// link is a connection to that process), so a call for a session that
// arrives at another replica is forwarded to its holder: each replica
// advertises, under peers/<replica> in the store, the URL at which it
// serves forwarded calls ([Path]), and every forwarded call carries a key
// that only servers holding the store can read (peers-key, made by the
// first replica). The holder runs the call as the principal the caller
// authenticated, exactly as if it had arrived there.
//
// A forwarded call's answer is a stream of JSON lines: the output of a run
// as it arrives ({"chunk": ...}), then the result ({"result": ...}) or an
// error ({"error": {"code", "message"}}), so a run through another replica
// still streams its progress.
package peers

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
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

// request is a forwarded call.
type request struct {
	Principal principal.Principal `json:"principal"`
	Op        string              `json:"op"`
	Body      json.RawMessage     `json:"body"`
}

// line is one line of a forwarded call's answer.
type line struct {
	Chunk  *chunk          `json:"chunk,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Error  *callError      `json:"error,omitempty"`
}

type chunk struct {
	Stage  int            `json:"stage"`
	Stream sandbox.Stream `json:"stream"`
	Data   []byte         `json:"data"`
}

type callError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Call forwards op with body to replica, as ctx's principal, and returns
// the result's JSON; onChunk, if set, sees a run's output as it arrives.
// An error the holder answered comes back as the *engine.Error it was.
func (d *Directory) Call(ctx context.Context, replica, op string, body any, onChunk func(sandbox.Chunk)) (json.RawMessage, error) {
	url, err := d.urlOf(ctx, replica)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	payload, err := json.Marshal(request{Principal: principal.FromContext(ctx), Op: op, Body: raw})
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+Path, bytes.NewReader(payload))
	if err != nil {
		return nil, err
	}
	req.Header.Set(keyHeader, d.key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := d.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reaching replica %s at %s: %w", replica, url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("replica %s answered %s: %s", replica, resp.Status, bytes.TrimSpace(msg))
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxRequestBytes)
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("replica %s answered an unreadable line: %w", replica, err)
		}
		switch {
		case l.Chunk != nil:
			if onChunk != nil {
				onChunk(sandbox.Chunk{Stage: l.Chunk.Stage, Stream: l.Chunk.Stream, Data: l.Chunk.Data})
			}
		case l.Error != nil:
			return nil, &engine.Error{Code: l.Error.Code, Message: l.Error.Message}
		case l.Result != nil:
			return l.Result, nil
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading replica %s's answer: %w", replica, err)
	}
	return nil, fmt.Errorf("replica %s ended its answer without a result (it may have stopped)", replica)
}

// Target serves forwarded calls: the sessions this replica holds.
type Target interface {
	// ServeForwarded runs op with body for ctx's principal on what this
	// replica holds, never forwarding it again.
	ServeForwarded(ctx context.Context, op string, body json.RawMessage, onChunk func(sandbox.Chunk)) (any, error)
}

// Handler serves the calls other replicas forward to target. It answers
// 404 to a request without the peers' key, as if nothing were there.
func (d *Directory) Handler(target Target) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || subtle.ConstantTimeCompare([]byte(r.Header.Get(keyHeader)), []byte(d.key)) != 1 {
			http.NotFound(w, r)
			return
		}
		var req request
		if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes)).Decode(&req); err != nil || req.Op == "" {
			http.Error(w, fmt.Sprintf("unreadable forwarded call: %v", err), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		flusher, _ := w.(http.Flusher)
		var mu sync.Mutex
		enc := json.NewEncoder(w)
		send := func(l line) {
			mu.Lock()
			defer mu.Unlock()
			_ = enc.Encode(l)
			if flusher != nil {
				flusher.Flush()
			}
		}
		ctx := principal.WithContext(r.Context(), req.Principal)
		res, err := target.ServeForwarded(ctx, req.Op, req.Body, func(c sandbox.Chunk) {
			send(line{Chunk: &chunk{Stage: c.Stage, Stream: c.Stream, Data: c.Data}})
		})
		if err != nil {
			ce := &callError{Code: engine.CodeInternal, Message: err.Error()}
			if ee, ok := errors.AsType[*engine.Error](err); ok {
				ce.Code = ee.Code
			}
			send(line{Error: ce})
			return
		}
		b, err := json.Marshal(res)
		if err != nil {
			send(line{Error: &callError{Code: engine.CodeInternal, Message: err.Error()}})
			return
		}
		send(line{Result: b})
	})
}
