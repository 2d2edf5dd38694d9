package replicas

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

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
