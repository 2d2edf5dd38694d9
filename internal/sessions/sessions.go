// Package sessions keeps stateful sessions: each a long-lived sandbox,
// hardened like every other, whose workspace persists from call to call
// and, for languages with a kernel (Python, JavaScript), whose interpreter
// keeps its variables and imports. Sessions share nothing with each other
// or with one-shot runs. Idle sessions and old ones are closed; a cap
// bounds how many live at once. [Manager.Create] starts one;
// [Manager.Prepare] checks a call in it as an [engine.Plan] and
// [Manager.RunPlan] runs that plan in the session's sandbox.
package sessions

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress"
	"github.com/mcp-code-runner/mcp-code-runner/internal/egress/gate"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/principal"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// Info describes a session.
type Info struct {
	SessionID          string                    `json:"session_id" jsonschema:"the session's id; pass it to run_code and the file tools"`
	Language           string                    `json:"language" jsonschema:"the session's language"`
	Stateful           bool                      `json:"stateful" jsonschema:"whether variables and imports persist between calls (Python, JavaScript); files always do"`
	CreatedAt          time.Time                 `json:"created_at" jsonschema:"when the session started"`
	LastUsedAt         time.Time                 `json:"last_used_at" jsonschema:"when it was last used"`
	IdleTimeoutSeconds int                       `json:"idle_timeout_seconds" jsonschema:"the session closes after this long unused"`
	ExpiresAt          time.Time                 `json:"expires_at" jsonschema:"when it closes if unused until then (or its maximum life ends)"`
	Calls              int                       `json:"calls" jsonschema:"runs so far"`
	Owner              string                    `json:"owner,omitempty" jsonschema:"the principal (token name or OAuth subject) whose session it is; shown to operators only"`
	Network            string                    `json:"network,omitempty" jsonschema:"the session's network tier: none, packages or allowlist"`
	Isolation          string                    `json:"isolation,omitempty" jsonschema:"what stands between the session's programs and the host's kernel: container or gvisor (gVisor's kernel)"`
	Packages           []engine.InstalledPackage `json:"packages,omitempty" jsonschema:"packages installed in the session (create_session's packages and install_packages), with their versions"`
	Paused             bool                      `json:"paused,omitempty" jsonschema:"the session is paused: no sandbox, its files kept; its next call resumes it by replaying its cells"`
	Secrets            []string                  `json:"secrets,omitempty" jsonschema:"the operator's secrets the session's calls use, by name (create_session's secrets); the programs see placeholders only"`
	Tools              []string                  `json:"tools,omitempty" jsonschema:"the MCP servers whose tools the session's code may call (create_session's tools)"`
	// SandboxID names the session's sandbox, for the audit log; clients do
	// not see it.
	SandboxID string `json:"-"`
	// MemoryBytes is the memory the session's sandbox uses now, where its
	// backend reads it from the host (0 where it cannot), for the operator
	// console; clients do not see it.
	MemoryBytes uint64 `json:"-"`
}

// File is an entry of list_files, or the answer of read_file.
type File struct {
	Path     string `json:"path" jsonschema:"path relative to the workspace"`
	Type     string `json:"type" jsonschema:"file, dir, symlink or other"`
	Size     int64  `json:"size" jsonschema:"size in bytes (files)"`
	Encoding string `json:"encoding,omitempty" jsonschema:"text or base64 (read_file)"`
	Content  string `json:"content,omitempty" jsonschema:"the content (read_file)"`
	SHA256   string `json:"sha256,omitempty" jsonschema:"hex SHA-256 of the content (read_file)"`
}

type session struct {
	id       string
	owner    string // principal name
	lang     languages.Language
	sb       sandbox.Sandbox
	extras   *extras
	created  time.Time
	idle     time.Duration
	callMu   sync.Mutex // one call at a time
	mu       sync.Mutex
	lastUsed time.Time
	calls    int
	closed   bool
	// ref is what a next server needs to re-attach to sb, which it can
	// when reattach is set (the store's record keeps both).
	ref       sandbox.Ref
	reattach  bool
	lastWrite time.Time // the record's last write
	// replay is the session's replay log (guarded by mu).
	replay replayLog
	// paused says sb is a pausedSandbox and the workspace is kept in an
	// archive whose SHA-256 is archiveSum; resumed, set by the resume,
	// is reported by the next run's result (all guarded by mu).
	paused     bool
	archiveSum string
	// checkpointSum, for a paused session whose sandbox was checkpointed
	// (checkpoint.go), is the checkpoint's SHA-256: its resume restores
	// it, and replays only when the checkpoint is refused or the restore
	// fails.
	checkpointSum string
	resumed       *engine.Resumed
	// lost, for a paused session, says it has no archive: its sandbox did
	// not survive its server's restart (lost says why), and its resume
	// replays its cells alone.
	lost string
	// noAutoPause is set once a pause was refused (its replay log
	// overflowed, its files are too large).
	noAutoPause bool
	// autoPausing is set while the reaper pauses the session, or waits
	// for one of its idlePauseSlots to.
	autoPausing bool
	// forkOf names the session whose sandbox this one shares, its
	// interpreter a copy of that one's (fork_session mode "forked").
	forkOf string
}

// Manager keeps the sessions of one server.
type Manager struct {
	eng     *engine.Engine
	gate    *gate.Gate        // the sessions' egress proxies
	tools   engine.ToolBroker // nil: sessions take no tools
	st      store.Store
	replica string
	log     *slog.Logger
	cfg     config.Sessions
	quota   int // live sessions per principal; 0: none
	stop    chan struct{}
	wg      sync.WaitGroup
	// fwd reaches the replicas holding the sessions this one does not
	// (forward.go); nil on a store no other replica shares.
	fwd Forwarder
	// spares are sandboxes made ahead for sessions (sessions.spares).
	spares *spares
	// idlePauseSlots bounds the reaper's pauses at once: many sessions
	// idle together would otherwise all be checkpointed (or archived) at
	// the same moment, each a burst of CPU, memory and disk.
	idlePauseSlots chan struct{}

	mu       sync.Mutex
	sessions map[string]*session
	creating map[string]int // principal name -> sessions being created
}

// NewManager returns a manager and starts its reaper. Its sessions are
// records in the engine's state store (see Recover).
func NewManager(eng *engine.Engine, opts ...Option) *Manager {
	m := &Manager{eng: eng, st: eng.Store(), replica: "local", log: slog.New(slog.DiscardHandler), cfg: eng.Config().Sessions,
		quota: eng.Config().Quotas.Sessions, stop: make(chan struct{}), sessions: map[string]*session{}, creating: map[string]int{},
		idlePauseSlots: make(chan struct{}, max(2, runtime.NumCPU()))}
	for _, o := range opts {
		o(m)
	}
	if m.gate == nil {
		m.gate = gate.New(eng.Config(), eng.Registry(), gate.Options{Store: m.st, Logger: m.log})
	}
	m.spares = newSpares(m)
	m.spares.fill(eng.Registry())
	m.wg.Add(1)
	go m.reap()
	return m
}

func invalid(format string, args ...any) error {
	return &engine.Error{Code: engine.CodeInvalid, Message: fmt.Sprintf(format, args...)}
}

// Create starts a session of language for ctx's principal; idleSeconds 0
// means the default.
func (m *Manager) Create(ctx context.Context, language string, idleSeconds int, opts Options) (info Info, err error) {
	owner := principal.FromContext(ctx).Name
	reg := m.eng.Registry()
	lang, ok := reg.Lookup(language)
	if !ok {
		return Info{}, invalid("unknown language %q; available: %s", language, strings.Join(reg.Names(), ", "))
	}
	switch {
	case idleSeconds < 0:
		return Info{}, invalid("idle_timeout_seconds must be positive")
	case idleSeconds == 0:
		idleSeconds = m.cfg.IdleTimeoutSeconds
	case idleSeconds > m.cfg.MaxIdleTimeoutSeconds:
		return Info{}, invalid("idle_timeout_seconds %d is above the maximum of %d", idleSeconds, m.cfg.MaxIdleTimeoutSeconds)
	}
	if err := m.reserve(owner); err != nil {
		return Info{}, err
	}
	defer m.unreserve(owner)
	idle := time.Duration(idleSeconds) * time.Second
	sb, extras, err := m.start(ctx, owner, lang, opts, idle)
	if err == nil {
		now := time.Now()
		s := &session{id: newID(), owner: owner, lang: lang, sb: sb, extras: extras, created: now, lastUsed: now, idle: idle, lastWrite: now}
		if ra, ok := m.eng.Backend().(sandbox.Reattacher); ok {
			s.ref, s.reattach = ra.RefOf(sb)
		}
		// Written before the answer: a server that restarts after it
		// re-attaches to the session.
		if err = m.put(ctx, s); err != nil {
			sb.Close()
			extras.close()
			err = &engine.Error{Code: engine.CodeInternal, Err: err, Message: fmt.Sprintf("the session could not be written to the state store (%v); try again once the store answers", err)}
		} else {
			m.mu.Lock()
			m.sessions[s.id] = s
			m.mu.Unlock()
			defer func() { info = m.info(s) }()
		}
	}
	return info, err
}

// reserve counts a session being created for owner, or says which quota
// or limit refuses it; unreserve undoes it once the session is live (or
// failed).
func (m *Manager) reserve(owner string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	creating, own := 0, m.creating[owner]
	for _, n := range m.creating {
		creating += n
	}
	live := 0
	for _, s := range m.sessions {
		s.mu.Lock()
		paused := s.paused
		s.mu.Unlock()
		if paused {
			continue // paused sessions count against quotas.paused_sessions
		}
		live++
		if s.owner == owner {
			own++
		}
	}
	if q := m.quota; q > 0 && own >= q {
		return &engine.Error{Code: engine.CodeQuota, Message: fmt.Sprintf(
			"over quota: %q already has %d live sessions, its quota of sessions; close one with close_session (list_sessions shows them), use run_code without a session, or ask the operator to raise quotas.sessions", owner, own)}
	}
	if n := live + creating; n >= m.cfg.MaxSessions {
		return &engine.Error{Code: engine.CodeBusy, Message: fmt.Sprintf(
			"the server already has %d live sessions, its limit; close one with close_session (list_sessions shows them) or use run_code without a session", n)}
	}
	m.creating[owner]++
	return nil
}

func (m *Manager) unreserve(owner string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.creating[owner]--; m.creating[owner] <= 0 {
		delete(m.creating, owner)
	}
}

// get finds a live session that ctx's principal may use: its own. Another
// principal's session is answered exactly like one that does not exist.
func (m *Manager) get(ctx context.Context, id string) (*session, error) {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok || !principal.FromContext(ctx).Uses(s.owner) {
		if h := m.elsewhere(ctx, id, false); h != nil {
			return nil, h
		}
		return nil, invalid("unknown session %q: it never existed, was closed, or expired after being idle; create_session starts a new one", id)
	}
	s.mu.Lock()
	paused := s.paused
	s.mu.Unlock()
	if paused {
		s.callMu.Lock()
		s.mu.Lock()
		paused = s.paused && !s.closed
		s.mu.Unlock()
		if paused {
			err := m.resume(ctx, s)
			if err != nil {
				s.callMu.Unlock()
				return nil, err
			}
		}
		s.callMu.Unlock()
	}
	select {
	case <-s.sb.Ended():
		m.drop(s)
		return nil, invalid("session %q ended (its sandbox stopped: out of memory, or killed at a deadline); create_session starts a new one", id)
	default:
	}
	return s, nil
}

func (m *Manager) touch(s *session) {
	s.mu.Lock()
	s.lastUsed = time.Now()
	s.calls++
	s.mu.Unlock()
	m.written(s)
}

// Run runs req in the session; req.Language must be the session's (or
// empty).
func (m *Manager) Run(ctx context.Context, req engine.Request, opts engine.RunOptions) (*engine.Result, error) {
	plan, err := m.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	return m.RunPlan(ctx, plan, opts)
}

// Prepare checks req as a call in its session (req.SessionID), whose
// language it takes: req.Language must be the session's (or empty).
func (m *Manager) Prepare(ctx context.Context, req engine.Request) (*engine.Plan, error) {
	s, err := m.get(ctx, req.SessionID)
	var held *heldElsewhere
	var lang languages.Language
	var secrets, tools []string
	var iso sandbox.Isolation
	switch {
	case errors.As(err, &held):
		// Its holder runs it; the plan is checked here all the same, so
		// that bad input is answered without a round trip.
		l, ok := m.eng.Registry().Lookup(held.rec.Language)
		if !ok {
			return nil, invalid("session %s runs %s, which this replica does not know; retry (another replica answers)", held.rec.ID, held.rec.Language)
		}
		lang, secrets, iso, tools = l, held.rec.Secrets, held.rec.Isolation, held.rec.Tools
	case err != nil:
		return nil, err
	default:
		s.mu.Lock()
		lang, secrets, iso, tools = s.lang, s.extras.secrets, s.extras.isolation, s.extras.tools
		s.mu.Unlock()
	}
	if req.Language != "" {
		if l, ok := m.eng.Registry().Lookup(req.Language); !ok || l.Name != lang.Name {
			return nil, invalid("session %s runs %s, not %q; create a session for that language or leave language empty", req.SessionID, lang.Name, req.Language)
		}
	}
	req.Language = lang.Name
	asked, err := sandbox.ParseIsolation(req.Isolation)
	if err == nil && req.Isolation != "" && asked.Stronger(iso) != iso.Or() {
		err = invalid("session %s runs under isolation %s; isolation is chosen when the session is created (create_session's isolation): create a session with isolation %s, or leave isolation out", req.SessionID, iso.Or(), asked)
	}
	var plan *engine.Plan
	if err == nil {
		plan, err = m.eng.PrepareInSession(ctx, req, lang, secrets)
	}
	if err == nil {
		plan.Isolation, plan.Tools = iso.Or(), tools
	}
	if err != nil {
		if s != nil {
			m.touch(s) // a call the engine refuses counts as a use, as one it runs
		}
		return nil, err
	}
	return plan, nil
}

// RunPlan runs a plan that Prepare made in its session's sandbox, one call
// at a time.
func (m *Manager) RunPlan(ctx context.Context, plan *engine.Plan, opts engine.RunOptions) (*engine.Result, error) {
	s, err := m.get(ctx, plan.Request.SessionID)
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		// The holder takes a run slot of its own for the principal: the
		// one held here is given back, so that the run counts once.
		if opts.Release != nil {
			opts.Release.Release()
		}
		req := plan.Request
		res := new(engine.Result)
		if err := m.forwardTo(ctx, held, opRun, forwardArgs{Request: &req, Long: opts.Long}, opts.OnChunk, res); err != nil {
			return nil, err
		}
		return res, nil
	}
	if err != nil {
		return nil, err
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	defer m.touch(s)
	opts.Env = append(opts.Env, s.extras.env...)
	opts.Proxy = s.extras.proxy
	opts.Files = append(opts.Files, s.extras.files...)
	res, err := m.eng.RunOn(ctx, s.sb, plan, opts)
	if err == nil && res.Status == engine.StatusOK {
		m.logCell(s, plan.Request)
	}
	if err == nil {
		s.mu.Lock()
		res.Resumed, s.resumed = s.resumed, nil
		s.mu.Unlock()
	}
	return res, err
}

// InstallResult is install_packages' result.
type InstallResult struct {
	SessionID string                    `json:"session_id" jsonschema:"the session"`
	Packages  []engine.InstalledPackage `json:"packages" jsonschema:"every package the session now has, with its version (those asked for and their dependencies)"`
	Cached    bool                      `json:"cached" jsonschema:"the set came from the server's cache, with no download"`
	Network   *egress.Report            `json:"network,omitempty" jsonschema:"what the installer did through the egress proxy (absent when cached)"`
}

// InstallPackages installs more packages in a live session; the session's
// programs can import them at once.
func (m *Manager) InstallPackages(ctx context.Context, id string, specs []string) (InstallResult, error) {
	s, err := m.get(ctx, id)
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		var out InstallResult
		err := m.forwardTo(ctx, held, opInstall, forwardArgs{Specs: specs}, nil, &out)
		return out, err
	}
	if err != nil {
		return InstallResult{}, err
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	defer m.touch(s)
	in, err := m.install(ctx, s.lang, s.extras, specs, "install-"+id)
	if err != nil {
		return InstallResult{}, err
	}
	return InstallResult{SessionID: id, Packages: in.Installed, Cached: in.Cached, Network: in.Network}, nil
}

// call sends a file operation to the session's agent.
func (m *Manager) call(ctx context.Context, id string, req wire.Request) (*sandbox.Result, *session, error) {
	s, err := m.get(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	s.callMu.Lock()
	defer s.callMu.Unlock()
	defer m.touch(s)
	req.Workdir, req.Session = wire.WorkspacePath, true
	res, err := s.sb.Call(ctx, sandbox.Job{Request: req, Deadline: time.Minute, RunID: "files-" + id}, nil)
	if err != nil {
		return nil, s, err
	}
	if res.AgentError != "" {
		return res, s, invalid("%s (the session stays usable)", res.AgentError)
	}
	if res.Incomplete {
		return res, s, &engine.Error{Code: engine.CodeInternal, Message: "the session's sandbox did not answer; it may have ended"}
	}
	return res, s, nil
}

// WriteFiles writes files into the session's workspace.
func (m *Manager) WriteFiles(ctx context.Context, id string, files []engine.InputFile) error {
	lim := m.eng.Config().Limits
	if len(files) == 0 {
		return invalid("no files given")
	}
	var out []wire.File
	for i, f := range files {
		data, err := engine.DecodeFile(f, lim)
		if err != nil {
			return invalid("files[%d]: %v", i, err)
		}
		out = append(out, wire.File{Path: f.Path, Data: data})
	}
	_, _, err := m.call(ctx, id, wire.Request{Op: wire.OpWriteFile, Files: out})
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		return m.forwardTo(ctx, held, opWriteFiles, forwardArgs{Files: files}, nil, nil)
	}
	return err
}

// ReadFile returns one file of the session's workspace.
func (m *Manager) ReadFile(ctx context.Context, id, path string) (wire.Artifact, error) {
	if err := wire.ValidPath(path); err != nil {
		return wire.Artifact{}, invalid("%v", err)
	}
	res, _, err := m.call(ctx, id, wire.Request{Op: wire.OpReadFile, Path: path, MaxReadBytes: int64(m.eng.Config().Artifacts.MaxFileBytes)})
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		var out wire.Artifact
		err := m.forwardTo(ctx, held, opReadFile, forwardArgs{Path: path}, nil, &out)
		return out, err
	}
	if err != nil {
		return wire.Artifact{}, err
	}
	if len(res.Artifacts) != 1 {
		return wire.Artifact{}, invalid("%s could not be read", path)
	}
	return res.Artifacts[0], nil
}

// ListFiles lists the session's workspace (or a directory in it).
func (m *Manager) ListFiles(ctx context.Context, id, dir string) ([]File, error) {
	if dir != "" && dir != "." {
		if err := wire.ValidPath(dir); err != nil {
			return nil, invalid("%v", err)
		}
	}
	res, _, err := m.call(ctx, id, wire.Request{Op: wire.OpListFiles, Path: dir})
	if held := (*heldElsewhere)(nil); errors.As(err, &held) {
		var out []File
		err := m.forwardTo(ctx, held, opListFiles, forwardArgs{Path: dir}, nil, &out)
		return out, err
	}
	if err != nil {
		return nil, err
	}
	out := make([]File, 0, len(res.Artifacts))
	for _, a := range res.Artifacts {
		out = append(out, File{Path: a.Path, Type: a.Type, Size: a.Size})
	}
	return out, nil
}

// Close ends a session and removes its sandbox: ctx's principal's own, or
// any for an operator.
func (m *Manager) Close(ctx context.Context, id string) (Info, error) {
	p := principal.FromContext(ctx)
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok || !p.Owns(s.owner) {
		if held := m.elsewhere(ctx, id, true); held != nil {
			var out Info
			err := m.forwardTo(ctx, held, opClose, forwardArgs{}, nil, &out)
			return out, err
		}
		return Info{}, invalid("unknown session %q: it never existed, was already closed, or expired", id)
	}
	info := m.info(s)
	if p.Operator {
		info.Owner = s.owner
	}
	m.drop(s)
	return info, nil
}

func (m *Manager) drop(s *session) {
	m.mu.Lock()
	delete(m.sessions, s.id)
	m.mu.Unlock()
	s.mu.Lock()
	already := s.closed
	s.closed = true
	s.mu.Unlock()
	if !already {
		m.forget(s.id)
		s.mu.Lock()
		sb, x := s.sb, s.extras
		s.mu.Unlock()
		closeSandbox(sb, x)
		m.removeArchive(s.id)
	}
}

// Count returns how many sessions are live (metrics).
func (m *Manager) Count() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.sessions)
}

// SandboxOf returns the sandbox of a live session, or "" (for the audit
// log, after a tool call on the session succeeded).
func (m *Manager) SandboxOf(id string) string {
	m.mu.Lock()
	s, ok := m.sessions[id]
	m.mu.Unlock()
	if !ok {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.sb.ID()
}

func (s *session) autoPauseRefused() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.noAutoPause || s.autoPausing
}

// List returns the live sessions of ctx's principal, newest first; an
// operator sees every principal's, with their owners.
func (m *Manager) List(ctx context.Context) []Info {
	p := principal.FromContext(ctx)
	m.mu.Lock()
	var out []Info
	for _, s := range m.sessions {
		if !p.Owns(s.owner) {
			continue
		}
		info := m.info(s)
		if p.Operator {
			info.Owner = s.owner
			info.MemoryBytes = s.memoryUsage()
		}
		out = append(out, info)
	}
	m.mu.Unlock()
	out = append(out, m.remoteInfos(ctx)...)
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	if out == nil {
		out = []Info{}
	}
	return out
}

// memoryUsage is the memory s's sandbox uses now, or 0 where its backend
// cannot read it.
func (s *session) memoryUsage() uint64 {
	s.mu.Lock()
	sb := s.sb
	s.mu.Unlock()
	n, _ := sandbox.MemoryUsage(sb)
	return n
}

func (m *Manager) info(s *session) Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	expires := s.lastUsed.Add(s.idle)
	if end := s.created.Add(time.Duration(m.cfg.MaxLifeSeconds) * time.Second); end.Before(expires) {
		expires = end
	}
	return Info{SessionID: s.id, Language: s.lang.Name, Stateful: s.lang.Kernel != nil, CreatedAt: s.created,
		LastUsedAt: s.lastUsed, IdleTimeoutSeconds: int(s.idle.Seconds()), ExpiresAt: expires, Calls: s.calls,
		SandboxID: s.sb.ID(), Network: s.extras.tier, Isolation: string(s.extras.isolation.Or()), Packages: s.extras.packages(), Paused: s.paused,
		Secrets: append([]string(nil), s.extras.secrets...), Tools: append([]string(nil), s.extras.tools...)}
}

// reap closes sessions past their idle timeout or maximum life.
func (m *Manager) reap() {
	defer m.wg.Done()
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-m.stop:
			return
		case <-t.C:
		}
		now := time.Now()
		var expired, idle []*session
		pauseAfter := time.Duration(m.cfg.IdlePauseSeconds) * time.Second
		m.mu.Lock()
		for _, s := range m.sessions {
			if !s.callMu.TryLock() {
				continue // busy: a call in flight is not idleness
			}
			s.callMu.Unlock()
			info := m.info(s)
			switch {
			case now.After(info.ExpiresAt):
				expired = append(expired, s)
			case pauseAfter > 0 && !info.Paused && now.Sub(info.LastUsedAt) >= pauseAfter && !s.autoPauseRefused():
				idle = append(idle, s)
			}
		}
		m.mu.Unlock()
		for _, s := range expired {
			m.drop(s)
		}
		for _, s := range idle {
			s.mu.Lock()
			s.autoPausing = true
			s.mu.Unlock()
			m.wg.Go(func() {
				defer func() {
					s.mu.Lock()
					s.autoPausing = false
					s.mu.Unlock()
				}()
				select {
				case m.idlePauseSlots <- struct{}{}:
					defer func() { <-m.idlePauseSlots }()
				case <-m.stop:
					return
				}
				// A call while it waited for the slot made it busy again.
				if info := m.info(s); info.Paused || time.Since(info.LastUsedAt) < pauseAfter {
					return
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				if _, err := m.pause(ctx, s); err != nil {
					m.log.Warn("an idle session was not paused", "session", s.id, "err", err)
				}
			})
		}
	}
}

// Shutdown closes every session.
func (m *Manager) Shutdown() {
	close(m.stop)
	m.wg.Wait()
	m.spares.close()
	m.mu.Lock()
	all := make([]*session, 0, len(m.sessions))
	for _, s := range m.sessions {
		all = append(all, s)
	}
	m.mu.Unlock()
	var wg sync.WaitGroup
	for _, s := range all {
		wg.Go(func() { m.drop(s) })
	}
	wg.Wait()
}

func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "sess-" + hex.EncodeToString(b[:])
}
