package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
	"github.com/mcp-code-runner/mcp-code-runner/internal/store"
)

// sessionStateSection measures fork_session, pause_session and the resume
// of an idle session holding a large state (the registry's session_state
// role: a Python list of a million integers): fork and resume rebuild the
// state by replaying the session's cells in a new sandbox. They run twice,
// side by side: each starting its own sandbox, and taking a spare one
// (sessions.spares) with the interpreter started ahead.
func sessionStateSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, runs int, report *Report) error {
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
	scfg.Sessions.Spares = nil
	if spares {
		how = "a spare sandbox, interpreter started ahead"
		scfg.Sessions.Spares = []string{role.Language + "=1"}
	}
	eng := engine.New(scfg, reg, b, nil, engine.WithStore(store.NewMemory()))
	defer closeEngine(eng)
	m := sessions.NewManager(eng)
	defer m.Shutdown()
	spareReady := func() error {
		if !spares {
			return nil
		}
		deadline := time.Now().Add(spareWait)
		for m.SparesReady(role.Language) < 1 {
			if time.Now().After(deadline) {
				return fmt.Errorf("no spare %s sandbox within %s", role.Language, spareWait)
			}
			time.Sleep(10 * time.Millisecond)
		}
		return nil
	}
	info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
	if err != nil {
		return nil, err
	}
	cell := func(code string) error {
		r, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: code}, engine.RunOptions{})
		if err == nil && r.Status != engine.StatusOK {
			err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
		}
		return err
	}
	if err := cell(role.State); err != nil {
		return nil, err
	}
	fork := &Sample{}
	forkMode := ""
	pause := &Sample{Name: "pause_session of an idle session (" + how + ")"}
	resume := &Sample{Name: "resume of a paused session + its call (replayed; " + how + ")"}
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
		if _, err := m.Pause(ctx, info.SessionID); err != nil {
			pause.Errs++
			continue
		}
		pause.add(time.Since(t))
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
	return []*Sample{fork, pause, resume}, nil
}

// sessionMemorySection measures what idle sessions hold against paused
// ones: n sessions of the session_state role's language, each with its
// common data libraries imported (role.Libraries), first live (the memory
// of their sandboxes, as their cgroups count it), then paused (no sandbox;
// what is kept on disk: the files' archive), and the resume of one.
func sessionMemorySection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, n int, report *Report) error {
	role := reg.Roles().SessionState
	if role == nil || role.Libraries == "" || role.Memory == "" {
		return nil
	}
	if _, ok := reg.Lookup(role.Language); !ok {
		return nil
	}
	dir, err := os.MkdirTemp("", "mcp-code-runner-bench-sessions-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scfg := cfg
	scfg.DataDir = dir
	scfg.Sessions.MaxSessions = max(scfg.Sessions.MaxSessions, n)
	scfg.Sessions.Spares = nil
	scfg.Quotas.Sessions, scfg.Quotas.PausedSessions = 0, 0
	eng := engine.New(scfg, reg, b, nil, engine.WithStore(store.NewMemory()))
	defer closeEngine(eng)
	m := sessions.NewManager(eng)
	defer m.Shutdown()
	cell := func(id, code string) (*engine.Result, error) {
		r, err := m.Run(ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
		if err == nil && r.Status != engine.StatusOK {
			err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
		}
		return r, err
	}
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
