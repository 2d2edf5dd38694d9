package bench

import (
	"context"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// The session whose pause and resume the targets are about: a
// Python session with a few standard modules imported and 10^5 integers.
const (
	restoredLanguage = "python"
	restoredState    = "import json, re, collections\nx = list(range(10**5))"
	restoredRead     = "len(x)"
	restoredAnswer   = "100000"
)

// phaseBackend is a checkpointing backend that times the checkpoints and
// restores it makes, and the checkpoint's verification beside a restore.
type phaseBackend struct {
	sandbox.Backend
	c sandbox.Checkpointer

	mu                          sync.Mutex
	checkpoint, restore, verify time.Duration
}

func (b *phaseBackend) CheckpointSupport() error { return b.c.CheckpointSupport() }

func (b *phaseBackend) Checkpoint(ctx context.Context, sb sandbox.Sandbox, dir string) error {
	t := time.Now()
	err := b.c.Checkpoint(ctx, sb, dir)
	b.mu.Lock()
	b.checkpoint = time.Since(t)
	b.mu.Unlock()
	return err
}

func (b *phaseBackend) Restore(ctx context.Context, t sandbox.Template, dir string, verify func() error) (sandbox.Sandbox, error) {
	timed := func() error {
		start := time.Now()
		err := verify()
		b.mu.Lock()
		b.verify = time.Since(start)
		b.mu.Unlock()
		return err
	}
	start := time.Now()
	sb, err := b.c.Restore(ctx, t, dir, timed)
	b.mu.Lock()
	b.restore = time.Since(start)
	b.mu.Unlock()
	return sb, err
}

func (b *phaseBackend) last() (checkpoint, restore, verify time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.checkpoint, b.restore, b.verify
}

// restoredSection measures, on b (the crun backend with the checkpoint
// tools), runs pauses of one Python session holding restoredState and the
// calls that resume it, restored: each one's own duration_ms and where
// its time went.
func restoredSection(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, runs int, report *Report) error {
	c, ok := b.(sandbox.Checkpointer)
	if !ok {
		return nil
	}
	if _, ok := reg.Lookup(restoredLanguage); !ok {
		return nil
	}
	pb := &phaseBackend{Backend: b, c: c}
	m, _, cell, done, err := librarySessions(ctx, cfg, reg, pb, 1, cfg.Sessions.CheckpointTools)
	if err != nil {
		return err
	}
	defer done()
	info, err := m.Create(ctx, restoredLanguage, 0, sessions.Options{})
	if err != nil {
		return err
	}
	if _, err := cell(info.SessionID, restoredState); err != nil {
		return err
	}
	pause, pauseCkpt := &Sample{Name: "pause_session, its duration_ms (checkpointed)"}, &Sample{Name: "of which the backend's checkpoint (agent lets go, CRIU dump, copies)"}
	resume, restore, verify := &Sample{Name: "resume, the result's resumed.duration_ms (restored)"}, &Sample{Name: "of which the backend's restore (prepare, CRIU restore, agent connects)"}, &Sample{Name: "beside it, the checkpoint's hash and manifest"}
	call, total := &Sample{Name: "the call itself after the resume"}, &Sample{Name: "resume + its call, wall time"}
	for range runs {
		p, err := m.Pause(ctx, info.SessionID)
		if err != nil || p.Mode != sessions.ModeRestored {
			pause.Errs++
			continue
		}
		ckpt, _, _ := pb.last()
		pause.add(time.Duration(p.DurationMs) * time.Millisecond)
		pauseCkpt.add(ckpt)
		t := time.Now()
		r, err := cell(info.SessionID, restoredRead)
		wall := time.Since(t)
		if err != nil || r.Resumed == nil || r.Resumed.Mode != sessions.ModeRestored || r.Value != restoredAnswer {
			resume.Errs++
			continue
		}
		_, rst, ver := pb.last()
		d := time.Duration(r.Resumed.DurationMs) * time.Millisecond
		resume.add(d)
		restore.add(rst)
		verify.add(ver)
		call.add(wall - d)
		total.add(wall)
	}
	fmt.Fprintf(w, "\n## Pause and resume, restored (%s: %q; crun backend, CRIU; %d runs, ms)\n\n", restoredLanguage, restoredState, runs)
	fmt.Fprintln(w, "| path | p50 | p90 | max | errors |")
	fmt.Fprintln(w, "|---|---|---|---|---|")
	for _, s := range []*Sample{pause, pauseCkpt, resume, restore, verify, call, total} {
		fmt.Fprintf(w, "| %s | %s | %s | %s | %d |\n", s.Name, ms(s.Quantile(.5)), ms(s.Quantile(.9)), ms(s.Quantile(1)), s.Errs)
		report.Rows = append(report.Rows, rowOf(restoredLanguage, s))
	}
	return nil
}
