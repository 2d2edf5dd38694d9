package bench

import (
	"context"
	"fmt"
	"io"
	"os"
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
// state by replaying the session's cells in a new sandbox.
func sessionStateSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, runs int, report *Report) error {
	role := reg.Roles().SessionState
	if role == nil {
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
	eng := engine.New(scfg, reg, b, nil, engine.WithStore(store.NewMemory()))
	defer closeEngine(eng)
	m := sessions.NewManager(eng)
	defer m.Shutdown()
	info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
	if err != nil {
		return err
	}
	cell := func(code string) error {
		r, err := m.Run(ctx, engine.Request{SessionID: info.SessionID, Code: code}, engine.RunOptions{})
		if err == nil && r.Status != engine.StatusOK {
			err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
		}
		return err
	}
	if err := cell(role.State); err != nil {
		return err
	}
	fork := &Sample{Name: "fork_session of an idle session (replayed)"}
	pause := &Sample{Name: "pause_session of an idle session"}
	resume := &Sample{Name: "resume of a paused session + its call (replayed)"}
	for range runs {
		t := time.Now()
		f, err := m.Fork(ctx, info.SessionID)
		if err != nil {
			fork.Errs++
		} else {
			fork.add(time.Since(t))
			_, _ = m.Close(ctx, f.Session.SessionID)
		}
		t = time.Now()
		if _, err := m.Pause(ctx, info.SessionID); err != nil {
			pause.Errs++
			continue
		}
		pause.add(time.Since(t))
		t = time.Now()
		if err := cell(role.Read); err != nil {
			resume.Errs++
			continue
		}
		resume.add(time.Since(t))
	}
	fmt.Fprintf(w, "\n## Session state: fork, pause, resume (%s, %d runs: %s)\n\n", role.Language, runs, role.State)
	fmt.Fprintln(w, "| path | p50 | p90 | errors |")
	fmt.Fprintln(w, "|---|---|---|---|")
	for _, s := range []*Sample{fork, pause, resume} {
		fmt.Fprintf(w, "| %s | %s | %s | %d |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.9)), s.Errs)
		report.Rows = append(report.Rows, rowOf(role.Language, s))
	}
	return nil
}
