// Package agentconn is the host half of the agent protocol, the same for
// every backend: it sends a job to a sandbox's agent in one frame, reads the
// agent's frames back, and bounds what it keeps whatever the sandbox sends.
//
// A backend supplies only a Link: a byte stream to its agent plus the
// signals the protocol needs from outside the sandbox (kill, OOM, ended,
// diagnostics). New turns a Link into a [sandbox.Sandbox], so a backend
// implements Create and its Link and nothing else of the protocol.
package agentconn

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Stream is a byte stream to one sandbox's agent.
type Stream struct {
	// Reader carries the agent's frames. It is read for every job of the
	// sandbox (sessions have many) through one buffer agentconn keeps, so
	// it need not be buffered itself.
	Reader io.Reader
	// Writer carries frames to the agent. A write that fails means the
	// frame did not reach the agent.
	Writer io.Writer
	// CloseWrite, if set, tells the agent that nothing more comes; a
	// one-shot sandbox calls it after its job.
	CloseWrite func() error
}

// Link is what a backend supplies for one sandbox: the stream to its agent
// and the signals only the outside of the sandbox can give.
type Link interface {
	// Stream returns the stream to the agent, waiting while the agent is
	// still choosing it (booting). The sandbox's first job calls it, and
	// the stream it returns then serves every later job; after an error
	// the next job calls it again. An error returned while Ended is closed
	// reads as sandbox.ErrDead.
	Stream(ctx context.Context) (Stream, error)
	// Kill stops the sandbox from outside (its deadline passed, or the
	// caller went away) and ends the stream, so that a blocked read
	// returns. It is called at most once per job and may be called after
	// the sandbox ended.
	Kill(ctx context.Context)
	// OOMKilled reports, after the stream ended without the agent's Done,
	// whether the sandbox hit its memory limit. It may wait briefly for the
	// sandbox to stop.
	OOMKilled(ctx context.Context) bool
	// Ended is closed when the sandbox has ended (the agent's stream is
	// closed for good).
	Ended() <-chan struct{}
	// Diagnostics returns what the agent printed on its standard error so
	// far, bounded (see Diagnostics).
	Diagnostics() string
	// Close removes the sandbox. It is called once.
	Close()
}

// OOMCounter is a Link that counts its sandbox's OOM kills from outside,
// for a sandbox whose agent cannot see them: under gVisor the cgroup files
// the agent reads are gVisor's own, which count none, while the host's
// cgroup, which holds gVisor's kernel and the host processes that carry
// its programs' memory, counts the host's OOM killer's kills there.
type OOMCounter interface {
	// OOMKills is how many OOM kills the sandbox's cgroup has counted, or
	// -1 when it cannot tell (the agent counts them itself).
	OOMKills() int
}

// Sandbox is a [sandbox.Sandbox] driven over a Link.
type Sandbox struct {
	id   string
	link Link
	log  *slog.Logger

	used   atomic.Bool
	closed sync.Once

	streamMu sync.Mutex
	stream   *Stream       // nil until the first job got it
	reader   *bufio.Reader // reads stream.Reader, for every job
	writeMu  sync.Mutex    // one frame at a time to the agent

	// oomBefore is the OOM kills counted from outside (OOMCounter) when
	// the job in flight was sent; a sandbox's jobs are one at a time.
	oomBefore int
}

var _ sandbox.Sandbox = (*Sandbox)(nil)

// New returns the sandbox named id whose agent link reaches; log receives
// its logs (nil discards them).
func New(id string, link Link, log *slog.Logger) *Sandbox {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Sandbox{id: id, link: link, log: log}
}

// ID names the sandbox.
func (s *Sandbox) ID() string { return s.id }

// Link returns the backend's link to the sandbox's agent.
func (s *Sandbox) Link() Link { return s.link }

// Ended is closed when the sandbox has ended.
func (s *Sandbox) Ended() <-chan struct{} { return s.link.Ended() }

// Close removes the sandbox; it is safe to call more than once.
func (s *Sandbox) Close() { s.closed.Do(s.link.Close) }

// MemoryUsage is the sandbox's memory use now, where its link reads it
// from the host ([sandbox.MemoryReader]).
func (s *Sandbox) MemoryUsage() (bytes uint64, ok bool) {
	if m, is := s.link.(sandbox.MemoryReader); is {
		return m.MemoryUsage()
	}
	return 0, false
}

// Ready asks the agent whether it, and what the sandbox starts ahead of
// the job (a warm interpreter, a prestart command), are ready for a job,
// and waits for its answer ([wire.KindReady] both ways). It is for a sandbox
// not yet given a job (a pool's refill), and not to be called beside a
// job; a job sent without it is served all the same, once the agent is
// ready. After an error the sandbox is of no use: the caller closes it,
// which also ends a read still waiting.
func (s *Sandbox) Ready(ctx context.Context) error {
	stream, r, err := s.getStream(ctx)
	if err != nil {
		select {
		case <-s.link.Ended():
			return s.dead("")
		default:
			return fmt.Errorf("reaching the sandbox's agent: %w", err)
		}
	}
	s.writeMu.Lock()
	err = wire.WriteFrame(stream.Writer, wire.Frame{Kind: wire.KindReady})
	s.writeMu.Unlock()
	if err != nil {
		return s.dead(fmt.Sprintf("asking whether it is ready: %v ", err))
	}
	got := make(chan error, 1)
	go func() {
		for {
			f, err := wire.ReadFrameLimit(r, 0)
			switch {
			case err != nil:
				got <- err
			case f.Kind == wire.KindHello:
				continue
			case f.Kind != wire.KindReady:
				got <- fmt.Errorf("%w: expected the agent's ready, got kind %q", wire.ErrBadFrame, f.Kind)
			default:
				got <- nil
			}
			return
		}
	}()
	select {
	case err := <-got:
		if err == nil {
			return nil
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return s.dead("its agent ended before it was ready ")
		}
		select {
		case <-s.link.Ended():
			return s.dead("")
		default:
			return fmt.Errorf("waiting for the sandbox's agent to be ready: %w", err)
		}
	case <-s.link.Ended():
		return s.dead("")
	case <-ctx.Done():
		return fmt.Errorf("waiting for the sandbox's agent to be ready: %w", ctx.Err())
	}
}

// Exec sends the job in one frame and reads the agent's frames until Done,
// the deadline, or the caller's context ends (which kills the sandbox).
func (s *Sandbox) Exec(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	if !s.used.CompareAndSwap(false, true) {
		return nil, sandbox.ErrUsed
	}
	return s.exchange(ctx, job, onChunk, false)
}

// Call sends one job of a session and reads its answer; the sandbox stays
// for the next. The caller serializes calls. A caller that goes away
// cancels the job inside the sandbox; only the deadline kills the sandbox.
func (s *Sandbox) Call(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk)) (*sandbox.Result, error) {
	s.used.Store(true)
	return s.exchange(ctx, job, onChunk, true)
}

// dead is the ErrDead of a sandbox that ended before its job reached it.
func (s *Sandbox) dead(what string) error {
	return fmt.Errorf("%w: %s%s", sandbox.ErrDead, what, strings.TrimSpace(s.link.Diagnostics()))
}

// getStream returns the agent's stream and the one reader of its frames.
func (s *Sandbox) getStream(ctx context.Context) (*Stream, *bufio.Reader, error) {
	s.streamMu.Lock()
	defer s.streamMu.Unlock()
	if s.stream == nil {
		st, err := s.link.Stream(ctx)
		if err != nil {
			return nil, nil, err
		}
		s.stream, s.reader = &st, bufio.NewReaderSize(st.Reader, 64<<10)
	}
	return s.stream, s.reader, nil
}

func (s *Sandbox) exchange(ctx context.Context, job sandbox.Job, onChunk func(sandbox.Chunk), session bool) (*sandbox.Result, error) {
	select {
	case <-s.link.Ended():
		return nil, s.dead("")
	default:
	}
	payload, err := encodeRequest(job.Request)
	if err != nil {
		return nil, err
	}
	var killed sync.Once
	res := &sandbox.Result{}
	s.oomBefore = s.outsideOOMKills()
	kill := func(reason string) {
		killed.Do(func() {
			res.Killed = true
			s.log.Debug("killing sandbox", "run", job.RunID, "reason", reason)
			kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			s.link.Kill(kctx)
		})
	}
	deadline := time.AfterFunc(job.Deadline, func() { kill("deadline") })
	defer deadline.Stop()

	stream, r, err := s.getStream(ctx)
	if err != nil {
		select {
		case <-s.link.Ended():
			return nil, s.dead("")
		default:
			return nil, fmt.Errorf("reaching the sandbox's agent: %w", err)
		}
	}
	// A job given tools answers its programs' calls on the stream, so a
	// one-shot sandbox's is closed only once the answer is read.
	closeLater := job.Request.Tools != nil
	send := func() error {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		err := wire.WriteFrame(stream.Writer, wire.Frame{Kind: wire.KindRequest, Payload: payload})
		if err != nil {
			s.log.Debug("sending request to sandbox", "run", job.RunID, "err", err)
		}
		if !session && !closeLater && stream.CloseWrite != nil {
			// Closing our write side tells the agent nothing more comes.
			_ = stream.CloseWrite()
		}
		return err
	}
	sent := time.Now()
	if len(payload) > inlineRequestBytes {
		// The agent may answer before it has read it all; a failure to
		// send shows as an incomplete answer.
		go func() { _ = send() }()
	} else if err := send(); err != nil && !session {
		// The agent's end is closed (EPIPE): it died before the job
		// reached it, so nothing ran and another sandbox can take the job.
		// (A stream that takes the bytes whatever the sandbox's state, as
		// Docker's attached streams do, shows this as an incomplete result
		// instead.)
		return nil, s.dead(fmt.Sprintf("sending the job: %v ", err))
	}

	stopWatch := context.AfterFunc(ctx, func() {
		if !session {
			kill("caller went away")
			return
		}
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		_ = wire.WriteFrame(stream.Writer, wire.Frame{Kind: wire.KindCancel})
	})
	defer stopWatch()

	tools := newToolCalls(ctx, job, func(f wire.Frame) error {
		s.writeMu.Lock()
		defer s.writeMu.Unlock()
		return wire.WriteFrame(stream.Writer, f)
	})
	done := readFrames(r, job.Request, res, onChunk, tools)
	tools.stop()
	if closeLater && !session && stream.CloseWrite != nil {
		s.writeMu.Lock()
		_ = stream.CloseWrite()
		s.writeMu.Unlock()
	}
	res.Elapsed = time.Since(sent)
	killed.Do(func() {}) // settle res.Killed
	s.settle(ctx, job, res, done)
	return res, nil
}

// encodeRequest is req's frame payload, refused when it is larger than the
// agent reads.
func encodeRequest(req wire.Request) ([]byte, error) {
	payload, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("encoding request: %w", err)
	}
	if len(payload) > wire.MaxFrameBytes {
		return nil, fmt.Errorf("request of %d bytes is larger than the sandbox accepts (%d)", len(payload), wire.MaxFrameBytes)
	}
	return payload, nil
}

// settle completes res once the frames are read (done when the Done
// frame came): the link's diagnostics and, for an answer cut short,
// whether the sandbox was OOM-killed; a stage killed for memory marks the
// whole result so.
func (s *Sandbox) settle(ctx context.Context, job sandbox.Job, res *sandbox.Result, done bool) {
	res.Diagnostics = s.link.Diagnostics()
	if !done {
		res.Incomplete = true
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		res.OOMKilled = s.link.OOMKilled(octx)
		cancel()
		if !res.Killed && !res.OOMKilled && res.Diagnostics != "" {
			s.log.Warn("sandbox agent ended early", "run", job.RunID, "stderr", res.Diagnostics)
		}
	}
	// The kills counted from outside during the job are the last stage's:
	// the one the memory limit ended, or the one running when it was hit.
	if s.oomBefore >= 0 && s.outsideOOMKills() > s.oomBefore && len(res.Stages) > 0 {
		res.Stages[len(res.Stages)-1].OOMKilled = true
	}
	for _, st := range res.Stages {
		if st.OOMKilled {
			res.OOMKilled = true
		}
	}
}

// outsideOOMKills is the OOM kills the link counts from outside, or -1
// when it counts none (OOMCounter).
func (s *Sandbox) outsideOOMKills() int {
	if c, ok := s.link.(OOMCounter); ok {
		return c.OOMKills()
	}
	return -1
}
