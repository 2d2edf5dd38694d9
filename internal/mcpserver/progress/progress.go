// Package progress streams a tool call's output as MCP
// notifications/progress while it runs, rate-limited and split by stream
// and stage: to the calling request's session (run_code) or to whoever a
// task's progress goes to now ([tasks.Layer]).
package progress

import (
	"context"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// Progress streaming limits: a notification at most every progressEvery,
// or sooner once progressBytes of output are waiting.
const (
	progressEvery = 250 * time.Millisecond
	progressBytes = 8 << 10
)

// Streamer turns sandbox output into notifications/progress on the
// request that asked for it (a progress token), rate-limited. Each
// notification's message is the output since the previous one; its _meta
// carries the same split by stream and stage.
type Streamer struct {
	ctx     context.Context
	session *mcp.ServerSession
	token   any
	stages  []string
	// notify, when set, sends instead of session (a task's progress goes
	// wherever its client listens now).
	notify func(context.Context, *mcp.ProgressNotificationParams) error

	mu       sync.Mutex
	stdout   strings.Builder
	stderr   strings.Builder
	stage    int
	sent     float64 // bytes reported so far: the progress value
	timer    *time.Timer
	closed   bool
	lastSend time.Time
}

// ForRequest returns a Streamer to req's session, or nil when the request
// carries no progress token.
func ForRequest(ctx context.Context, req *mcp.CallToolRequest, stages []string) *Streamer {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return &Streamer{ctx: ctx, session: req.Session, token: token, stages: stages}
}

// Notifying returns a Streamer that sends with notify instead of a
// session: a task's progress goes wherever its client listens now.
func Notifying(token any, stages []string, notify func(context.Context, *mcp.ProgressNotificationParams) error) *Streamer {
	return &Streamer{ctx: context.Background(), token: token, stages: stages, notify: notify}
}

// OnChunk is the engine hook.
func (p *Streamer) OnChunk(c sandbox.Chunk) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return
	}
	if c.Stage != p.stage && p.stdout.Len()+p.stderr.Len() > 0 {
		p.flushLocked() // one notification never mixes stages
	}
	p.stage = c.Stage
	if c.Stream == sandbox.Stdout {
		p.stdout.Write(c.Data)
	} else {
		p.stderr.Write(c.Data)
	}
	switch {
	case p.stdout.Len()+p.stderr.Len() >= progressBytes:
		p.flushLocked()
	case p.timer == nil:
		wait := progressEvery - time.Since(p.lastSend)
		p.timer = time.AfterFunc(max(wait, 0), func() {
			p.mu.Lock()
			defer p.mu.Unlock()
			p.timer = nil
			if !p.closed {
				p.flushLocked()
			}
		})
	}
}

// Status sends msg, a note on where the call stands before its program
// runs ("building image for rust: step 4/9"), as one notification of stage
// "image"; the progress value moves on by one so that it still increases.
func (p *Streamer) Status(msg string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed || p.ctx.Err() != nil {
		return
	}
	p.sent++
	send := p.notify
	if send == nil {
		send = p.session.NotifyProgress
	}
	_ = send(p.ctx, &mcp.ProgressNotificationParams{
		Meta:          mcp.Meta{"stage": "image"},
		ProgressToken: p.token,
		Progress:      p.sent,
		Message:       toValidUTF8(msg),
	})
}

// Close sends what is left; nothing is sent after it, nor after the
// request's context ends (a cancelled request gets nothing more).
func (p *Streamer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.flushLocked()
	p.closed = true
}

func (p *Streamer) flushLocked() {
	out, errs := p.stdout.String(), p.stderr.String()
	p.stdout.Reset()
	p.stderr.Reset()
	if out == "" && errs == "" || p.ctx.Err() != nil {
		return
	}
	p.sent += float64(len(out) + len(errs))
	p.lastSend = time.Now()
	stage := "run"
	if p.stage < len(p.stages) {
		stage = p.stages[p.stage]
	}
	msg := out
	if errs != "" {
		msg += prefixLines("[stderr] ", errs)
	}
	meta := mcp.Meta{"stage": stage}
	if out != "" {
		meta["stdout"] = toValidUTF8(out)
	}
	if errs != "" {
		meta["stderr"] = toValidUTF8(errs)
	}
	send := p.notify
	if send == nil {
		send = p.session.NotifyProgress
	}
	// Sending blocks on a slow client at worst for this request's output.
	_ = send(p.ctx, &mcp.ProgressNotificationParams{
		Meta:          meta,
		ProgressToken: p.token,
		Progress:      p.sent,
		Message:       toValidUTF8(msg),
	})
}

func prefixLines(prefix, s string) string {
	lines := strings.SplitAfter(s, "\n")
	var b strings.Builder
	for _, l := range lines {
		if l != "" {
			b.WriteString(prefix)
			b.WriteString(l)
		}
	}
	return b.String()
}

func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}
