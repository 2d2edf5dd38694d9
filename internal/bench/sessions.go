package bench

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// sessionStateSection measures fork_session, pause_session and the resume
// of an idle session holding a large state (the registry's session_state
// role: a Python list of a million integers): on the docker backend, a
// fork made in place or replayed, and a resume that replays the session's
// cells in a new sandbox, each starting its own sandbox, and taking a spare
// one (sessions.spares) with the interpreter started ahead; beside them,
// where the host has the checkpoint tools, the crun backend's pause that
// checkpoints the sandbox and resume that restores it (checkpoints nil
// otherwise).
func sessionStateSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b, checkpoints sandbox.Backend, runs int, report *Report) error {
	role := reg.Roles().SessionState
	if role == nil {
		return nil
	}
	if _, ok := reg.Lookup(role.Language); !ok {
		return nil
	}
	cold, err := measureSessionState(ctx, cfg, reg, b, runs, false)
	if err != nil {
		return err
	}
	spared, err := measureSessionState(ctx, cfg, reg, b, runs, true)
	if err != nil {
		return err
	}
	if checkpoints != nil {
		restored, err := measureSessionState(ctx, cfg, reg, checkpoints, runs, false)
		if err != nil {
			return err
		}
		spared = append(spared, restored[1:]...) // its fork is the docker backend's
	}
	fmt.Fprintf(w, "\n## Session state: fork, pause, resume (%s, %d runs: %s)\n\n", role.Language, runs, role.State)
	fmt.Fprintln(w, "| path | p50 | p90 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range append(cold, spared...) {
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.9)), s.Errs)
		report.Rows = append(report.Rows, rowOf(role.Language, s))
	}
	return nil
}

// spareWait bounds the wait for a spare sandbox before a timed fork or
// resume: a spare is made in about a second, more on a loaded host.
const spareWait = 2 * time.Minute

// measureSessionState times fork, pause and resume of one session, with
// a spare sandbox (python=1) ready before each fork and resume, or without
// spares.
func measureSessionState(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, runs int, spares bool) ([]*Sample, error) {
	role := reg.Roles().SessionState
	dir, err := os.MkdirTemp("", "mcp-code-runner-bench-sessions-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	scfg := cfg
	scfg.DataDir = dir
	how := "a sandbox started for it"
	if _, ok := b.(sandbox.Checkpointer); ok {
		how = "crun backend, checkpoint"
	}
	scfg.Sessions.Spares = nil
	if spares {
		how = "a spare sandbox, interpreter started ahead"
		scfg.Sessions.Spares = []string{role.Language + "=1"}
	}
	srv, stop, err := startSessionServer(ctx, scfg, reg, b)
	if err != nil {
		return nil, err
	}
	defer stop()
	m := srv.Sessions()
	spareReady := func() error {
		if !spares {
			return nil
		}
		return waitForSpare(m, role.Language)
	}
	info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
	if err != nil {
		return nil, err
	}
	cell := func(code string) error { return runCell(ctx, m, info.SessionID, code) }
	if err := cell(role.State); err != nil {
		return nil, err
	}
	fork := &Sample{}
	forkMode, pauseMode := "", ""
	pause, resume := &Sample{}, &Sample{}
	for range runs {
		if err := spareReady(); err != nil {
			return nil, err
		}
		t := time.Now()
		f, err := m.Fork(ctx, info.SessionID)
		if err != nil {
			fork.Errs++
		} else {
			fork.add(time.Since(t))
			forkMode = f.Mode
			_, _ = m.Close(ctx, f.Session.SessionID)
		}
		t = time.Now()
		p, err := m.Pause(ctx, info.SessionID)
		if err != nil {
			pause.Errs++
			continue
		}
		pause.add(time.Since(t))
		pauseMode = p.Mode
		if err := spareReady(); err != nil {
			return nil, err
		}
		t = time.Now()
		if err := cell(role.Read); err != nil {
			resume.Errs++
			continue
		}
		resume.add(time.Since(t))
	}
	fork.Name = "fork_session of an idle session (" + forkMode + "; " + how + ")"
	pause.Name = "pause_session of an idle session (then " + pauseMode + "; " + how + ")"
	resume.Name = "resume of a paused session + its call (" + pauseMode + "; " + how + ")"
	return []*Sample{fork, pause, resume}, nil
}

// runCell runs code in session id, an error unless it ends ok.
func runCell(ctx context.Context, m *sessions.Manager, id, code string) error {
	r, err := m.Run(ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
	if err == nil && r.Status != engine.StatusOK {
		err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
	}
	return err
}

// waitForSpare waits, at most spareWait, until m has a spare sandbox of
// language ready.
func waitForSpare(m *sessions.Manager, language string) error {
	deadline := time.Now().Add(spareWait)
	for m.SparesReady(language) < 1 {
		if time.Now().After(deadline) {
			return fmt.Errorf("no spare %s sandbox within %s", language, spareWait)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// sessionMemorySection measures what idle sessions hold against paused
// ones: n sessions of the session_state role's language, each with its
// common data libraries imported (role.Libraries), first live (the memory
// of their sandboxes, as their cgroups count it), then paused (no sandbox;
// what is kept on disk: the files' archive), and the resume of one.
func sessionMemorySection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, n int, report *Report) error {
	role, ok := librariesRole(reg)
	if !ok {
		return nil
	}
	// The replayed pause; checkpointSection measures the other.
	m, dir, cell, done, err := librarySessions(ctx, cfg, reg, b, n, "off")
	if err != nil {
		return err
	}
	defer done()
	ids := make([]string, 0, n)
	var live int64
	for range n {
		info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
		if err != nil {
			return err
		}
		ids = append(ids, info.SessionID)
		if _, err := cell(info.SessionID, role.Libraries); err != nil {
			return err
		}
		r, err := cell(info.SessionID, role.Memory)
		if err != nil {
			return err
		}
		v, err := strconv.ParseInt(strings.TrimSpace(r.Value), 10, 64)
		if err != nil {
			return fmt.Errorf("the memory cell answered %q: %v", r.Value, err)
		}
		live += v
	}
	for _, id := range ids {
		if _, err := m.Pause(ctx, id); err != nil {
			return err
		}
	}
	var kept int64
	entries, _ := os.ReadDir(filepath.Join(dir, "paused-sessions"))
	for _, en := range entries {
		if fi, err := en.Info(); err == nil {
			kept += fi.Size()
		}
	}
	resume := &Sample{Name: "resume of a paused session with " + role.Libraries + " + its call (replayed)"}
	t := time.Now()
	if _, err := cell(ids[0], role.Memory); err != nil {
		resume.Errs++
	} else {
		resume.add(time.Since(t))
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(w, "\n## Idle against paused sessions (%d %s sessions, each after %q)\n\n", n, role.Language, role.Libraries)
	fmt.Fprintln(w, "| sessions | sandboxes | memory held (cgroups) | kept on disk | per session |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	fmt.Fprintf(w, "| %d idle | %d | %s | 0 | %s |\n", n, n, mib(live), mib(live/int64(n)))
	fmt.Fprintf(w, "| %d paused | 0 | 0 | %d bytes (file archives) | %d bytes on disk, and its replay log in the store |\n", n, kept, kept/int64(n))
	fmt.Fprintf(w, "\n| path | p50 | errors |\n|---|---|---|\n| %s | %s | %d |\n", resume.Name, ms(resume.Quantile(.5)), resume.Errs)
	report.Rows = append(report.Rows, rowOf(role.Language, resume))
	return nil
}

// checkpointSection measures checkpoints on b, the crun backend with the
// checkpoint tools: n sessions of the session_state role's language, each
// with its data libraries imported, paused (their sandboxes checkpointed:
// how long, and how large a checkpoint is) and resumed (restored: how
// long, with the call that reads the state).
func checkpointSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, n int, report *Report) error {
	role, ok := librariesRole(reg)
	if !ok {
		return nil
	}
	m, dir, cell, done, err := librarySessions(ctx, cfg, reg, b, n, cfg.Sessions.CheckpointTools)
	if err != nil {
		return err
	}
	defer done()
	pause := &Sample{Name: "pause_session with " + role.Libraries + " (checkpointed; crun backend)"}
	resume := &Sample{Name: "resume of a session with " + role.Libraries + " + its call (restored; crun backend)"}
	var sizes []int64
	for range n {
		info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
		if err != nil {
			return err
		}
		id := info.SessionID
		if _, err := cell(id, role.Libraries); err != nil {
			return err
		}
		t := time.Now()
		p, err := m.Pause(ctx, id)
		if err != nil || p.Mode != sessions.ModeRestored {
			pause.Errs++
			continue
		}
		pause.add(time.Since(t))
		sizes = append(sizes, dirSize(filepath.Join(dir, "checkpoints", id)))
		t = time.Now()
		r, err := cell(id, role.Memory)
		if err != nil || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored {
			resume.Errs++
			continue
		}
		resume.add(time.Since(t))
		_, _ = m.Close(ctx, id)
	}
	slices.Sort(sizes)
	size := "none"
	if len(sizes) > 0 {
		size = fmt.Sprintf("%.1f MiB (median of %d; %.1f to %.1f)", float64(sizes[len(sizes)/2])/(1<<20), len(sizes), float64(sizes[0])/(1<<20), float64(sizes[len(sizes)-1])/(1<<20))
	}
	fmt.Fprintf(w, "\n## Checkpoints of idle sessions (%d %s sessions, each after %q; crun backend, CRIU)\n\n", n, role.Language, role.Libraries)
	fmt.Fprintf(w, "A checkpoint on disk: %s.\n\n", size)
	fmt.Fprintln(w, "| path | p50 | p90 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range []*Sample{pause, resume} {
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.9)), s.Errs)
		report.Rows = append(report.Rows, rowOf(role.Language, s))
	}
	return nil
}

// dirSize is the bytes of the regular files under dir.
func dirSize(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}

// librariesRole is the session_state role, when it names data libraries
// and a memory cell for a language the registry has.
func librariesRole(reg *languages.Registry) (*languages.SessionState, bool) {
	role := reg.Roles().SessionState
	if role == nil || role.Libraries == "" || role.Memory == "" {
		return nil, false
	}
	_, ok := reg.Lookup(role.Language)
	return role, ok
}

// librarySessions is the sessions manager of a server on b for n sessions
// at once, with a data directory of its own (dir), no spares or quotas,
// and the checkpoint tools given; cell runs code in one of its sessions
// and fails unless it succeeds; done removes it all.
func librarySessions(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, n int, checkpointTools string) (m *sessions.Manager, dir string, cell func(id, code string) (*engine.Result, error), done func(), err error) {
	dir, err = os.MkdirTemp("", "mcp-code-runner-bench-sessions-")
	if err != nil {
		return nil, "", nil, nil, err
	}
	scfg := cfg
	scfg.DataDir = dir
	scfg.Sessions.MaxSessions = max(scfg.Sessions.MaxSessions, n)
	scfg.Sessions.Spares = nil
	scfg.Sessions.CheckpointTools = checkpointTools
	scfg.Quotas.Sessions, scfg.Quotas.PausedSessions = 0, 0
	srv, stop, err := startSessionServer(ctx, scfg, reg, b)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", nil, nil, err
	}
	m = srv.Sessions()
	cell = func(id, code string) (*engine.Result, error) {
		r, err := m.Run(ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
		if err == nil && r.Status != engine.StatusOK {
			err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
		}
		return r, err
	}
	done = func() {
		stop()
		_ = os.RemoveAll(dir)
	}
	return m, dir, cell, done, nil
}
