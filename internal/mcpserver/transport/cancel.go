package transport

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
)

// requestIDHeader carries, from the HTTP layer to the MCP handlers, the key
// of the HTTP request's context in a callLinker. It is always set by the
// server; a client's own value is dropped.
const requestIDHeader = "Mcr-Request-Id"

// callLinker lets a handler see its HTTP request's context, and lets a
// notifications/cancelled stop the call it names. The SDK ties handlers to
// the request only in the 2026 era, and in stateless mode a 2025-era
// notifications/cancelled arrives on another request, in another session.
// With this, closing the request or sending notifications/cancelled stops
// the run in both eras. A cancellation reaches only calls of the principal
// that sends it: the same JSON-RPC id from another principal is another
// call. One linker belongs to one HTTP handler.
type callLinker struct {
	maxBody int64
	prefix  string        // makes request ids unique across linkers of one server
	next    atomic.Uint64 // request ids
	// contexts maps a request id to the context of its HTTP request.
	contexts sync.Map
	// inflight maps a principal's tools/call (principal name and JSON-RPC
	// id) to the cancel function of its HTTP request.
	inflight sync.Map
}

// callCancel boxes a cancel function so that map entries compare by identity.
type callCancel struct{ cancel context.CancelFunc }

func newCallLinker(maxBody int64) *callLinker {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return &callLinker{maxBody: maxBody, prefix: hex.EncodeToString(b[:]) + "-"}
}

// wrap records each request's context and routes notifications/cancelled.
// It runs after authentication: the request's principal is known.
func (l *callLinker) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		id := l.prefix + strconv.FormatUint(l.next.Add(1), 36)
		r.Header.Del(requestIDHeader)
		r.Header.Set(requestIDHeader, id)
		l.contexts.Store(id, ctx)
		defer l.contexts.Delete(id)
		if r.Method == http.MethodPost && r.Body != nil {
			body, err := io.ReadAll(io.LimitReader(r.Body, l.maxBody+1))
			r.Body.Close()
			if err != nil {
				http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			var msg struct {
				Method string          `json:"method"`
				ID     json.RawMessage `json:"id"`
				Params struct {
					RequestID json.RawMessage `json:"requestId"`
				} `json:"params"`
			}
			if json.Unmarshal(body, &msg) == nil {
				owner := principal.LocalName
				if ti := auth.TokenInfoFromContext(r.Context()); ti != nil {
					owner = principalOf(ti).Name
				}
				switch {
				case msg.Method == "tools/call" && len(msg.ID) > 0:
					key, entry := callKey(owner, msg.ID), &callCancel{cancel}
					l.inflight.Store(key, entry)
					defer l.inflight.CompareAndDelete(key, entry)
				case msg.Method == "notifications/cancelled" && len(msg.Params.RequestID) > 0:
					if c, ok := l.inflight.Load(callKey(owner, msg.Params.RequestID)); ok {
						c.(*callCancel).cancel()
					}
				}
			}
		}
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// callKey names one principal's call; the length prefix keeps any name
// from reaching into the id.
func callKey(owner string, id json.RawMessage) string {
	return strconv.Itoa(len(owner)) + ":" + owner + "|" + string(id)
}

// middleware gives every MCP handler a context that also ends when the
// HTTP request that carried its call ends.
func (l *callLinker) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ex := req.GetExtra()
		if ex == nil || ex.Header == nil {
			return next(ctx, method, req)
		}
		v, ok := l.contexts.Load(ex.Header.Get(requestIDHeader))
		if !ok {
			return next(ctx, method, req)
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stop := context.AfterFunc(v.(context.Context), cancel)
		defer stop()
		return next(ctx, method, req)
	}
}
