package mcpserver

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

// progressStreamer turns sandbox output into notifications/progress on the
// request that asked for it (a progress token), rate-limited. Each
// notification's message is the output since the previous one; its _meta
// carries the same split by stream and stage.
type progressStreamer struct {
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

// newProgressStreamer returns nil when the request carries no progress token.
func newProgressStreamer(ctx context.Context, req *mcp.CallToolRequest, stages []string) *progressStreamer {
	if req == nil || req.Params == nil || req.Session == nil {
		return nil
	}
	token := req.Params.GetProgressToken()
	if token == nil {
		return nil
	}
	return &progressStreamer{ctx: ctx, session: req.Session, token: token, stages: stages}
}

// OnChunk is the engine hook.
func (p *progressStreamer) OnChunk(c sandbox.Chunk) {
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

// Close sends what is left; nothing is sent after it, nor after the
// request's context ends (a cancelled request gets nothing more).
func (p *progressStreamer) Close() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.flushLocked()
	p.closed = true
}

func (p *progressStreamer) flushLocked() {
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
