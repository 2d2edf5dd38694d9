package sessions

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// spares are session sandboxes made ahead (sessions.spares), each with its
// language's interpreter started, for the sessions that need nothing a
// sandbox is made with: no network, no packages, no secrets.
// create_session, fork_session and a resume take one instead of starting a
// sandbox and an interpreter (a cold container and the interpreter's
// start: most of a resume's time), and another is made behind it.
//
// A spare belongs to no one until it is taken: it was made with no
// principal's network, proxy or secrets, and its interpreter has run no
// code. It waits for a server's return after a restart as long as a
// session with the default idle timeout would, so it serves sessions that
// ask for that long or less; a sweep removes a stopped server's spares,
// since no session record names them.
type spares struct {
	m      *Manager
	ctx    context.Context // ends at Shutdown: a spare being made is dropped
	cancel context.CancelFunc
	grace  time.Duration

	mu     sync.Mutex
	ready  map[string][]spare // language name -> spares ready
	making map[string]int
	closed bool
	wg     sync.WaitGroup
}

type spare struct {
	sb   sandbox.Sandbox
	x    *extras
	made time.Time
}

func newSpares(m *Manager) *spares {
	ctx, cancel := context.WithCancel(context.Background())
	return &spares{m: m, ctx: ctx, cancel: cancel, grace: time.Duration(m.cfg.IdleTimeoutSeconds) * time.Second,
		ready: map[string][]spare{}, making: map[string]int{}}
}

// fit tells whether a session of lang with these options may take a spare.
func (p *spares) fit(lang languages.Language, tier string, opts Options, idle time.Duration) bool {
	return lang.Kernel != nil && p.m.cfg.SparesFor(lang.Name) > 0 && tier == egress.TierNone &&
		len(opts.Packages) == 0 && len(opts.Secrets) == 0 && idle <= p.grace
}

// take hands over a ready spare of lang, if there is one, and has another
// made; ok is false when none is ready (the caller starts a sandbox).
func (p *spares) take(lang languages.Language) (s spare, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	defer p.fillLocked(lang)
	for q := p.ready[lang.Name]; len(q) > 0; q = p.ready[lang.Name] {
		s, p.ready[lang.Name] = q[0], q[1:]
		dead := false
		select {
		case <-s.sb.Ended():
			dead = true // its host or its deadline ended it while it waited
		default:
		}
		if dead || time.Since(s.made) > spareMaxAge {
			p.wg.Go(s.drop)
			continue
		}
		return s, true
	}
	return spare{}, false
}

// fill starts making the spares each configured language lacks.
func (p *spares) fill(reg *languages.Registry) {
	for _, e := range p.m.cfg.Spares {
		name, _, _ := strings.Cut(e, "=")
		if lang, ok := reg.Lookup(strings.TrimSpace(name)); !ok || lang.Kernel == nil {
			p.m.log.Warn("sessions.spares names a language without a session interpreter; it gets no spares", "entry", e)
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, lang := range reg.Languages() {
		p.fillLocked(lang)
	}
}

func (p *spares) fillLocked(lang languages.Language) {
	if p.closed || lang.Kernel == nil {
		return
	}
	for len(p.ready[lang.Name])+p.making[lang.Name] < p.m.cfg.SparesFor(lang.Name) {
		p.making[lang.Name]++
		p.wg.Go(func() { p.make(lang) })
	}
}

// make makes one spare of lang: a session's sandbox with no network,
// packages or secrets, and its interpreter started.
func (p *spares) make(lang languages.Language) {
	s, err := p.build(lang)
	p.mu.Lock()
	p.making[lang.Name]--
	closed := p.closed
	if err == nil && !closed {
		s.made = time.Now()
		p.ready[lang.Name] = append(p.ready[lang.Name], s)
	}
	p.mu.Unlock()
	switch {
	case err != nil && !closed:
		// Not made again at once: the next take tries again, so that a
		// missing image or a full host does not spin.
		p.m.log.Warn("a spare session sandbox could not be made; sessions start their own", "language", lang.Name, "err", err)
	case err == nil && closed:
		s.drop()
	}
}

func (p *spares) build(lang languages.Language) (spare, error) {
	sb, x, err := p.m.startNew(p.ctx, "", lang, Options{}, p.grace, spareMaxAge)
	if err != nil {
		return spare{}, err
	}
	s := spare{sb: sb, x: x}
	job, _ := engine.KernelStartJob(p.m.eng.Config().Limits, lang, x.env)
	res, err := sb.Call(p.ctx, job, func(sandbox.Chunk) {})
	switch {
	case err != nil:
	case res.AgentError != "":
		err = errors.New(res.AgentError)
	case len(res.Stages) == 0 || res.Stages[0].ExitCode != 0:
		err = errors.New("the interpreter did not start")
		if len(res.Stages) > 0 {
			err = fmt.Errorf("the interpreter did not start: %s %s", res.Stages[0].Error, tail(string(res.Stages[0].Stderr), 400))
		}
	}
	if err != nil {
		s.drop()
		return spare{}, err
	}
	return s, nil
}

// spareMaxAge is how long a spare waits to be taken before it is replaced;
// its sandbox lives that much longer than a session's, so that a session
// that takes it late still has its whole life.
const spareMaxAge = 30 * time.Minute

func (s spare) drop() {
	s.sb.Close()
	s.x.close()
}

// close removes the spares ready and those being made.
func (p *spares) close() {
	p.mu.Lock()
	p.closed = true
	all := p.ready
	p.ready = map[string][]spare{}
	p.mu.Unlock()
	p.cancel()
	p.wg.Wait()
	var wg sync.WaitGroup
	for _, q := range all {
		for _, s := range q {
			wg.Go(s.drop)
		}
	}
	wg.Wait()
}

// SparesReady tells how many spare sandboxes of language are ready to be
// taken.
func (m *Manager) SparesReady(language string) int {
	m.spares.mu.Lock()
	defer m.spares.mu.Unlock()
	return len(m.spares.ready[language])
}
