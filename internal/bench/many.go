package bench

import (
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/engine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sessions"
)

// manyParallel is how many sessions the many-sessions section creates
// or uses at once: the machine's cores, not the sessions, set the pace.
const manyParallel = 4

// ManySessions measures n Python sessions on b on one host: each created
// and used (a cell holding its number, then its sandbox's memory), all
// left idle until the reaper pauses them (sessions.idle_pause_seconds 1),
// then each one's next call, which resumes it and must answer its own
// number: memory per live session, disk per paused one, how long the
// idle pauses took, and the time to each first answer after a pause.
func ManySessions(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, b sandbox.Backend, n int, report *Report) error {
	role, ok := librariesRole(reg)
	if !ok || n <= 0 {
		return nil
	}
	checkpoints := "off"
	how := "replayed"
	if c, ok := b.(sandbox.Checkpointer); ok && c.CheckpointSupport() == nil {
		checkpoints, how = cfg.Sessions.CheckpointTools, "checkpointed"
	}
	dir, err := os.MkdirTemp("", "mcp-code-runner-bench-many-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	scfg := cfg
	scfg.DataDir = dir
	scfg.Sessions.MaxSessions = max(scfg.Sessions.MaxSessions, n)
	scfg.Sessions.Spares = nil
	scfg.Sessions.CheckpointTools = checkpoints
	scfg.Sessions.IdlePauseSeconds = 1 // the reaper pauses each session a second after its last call
	scfg.Quotas.Sessions, scfg.Quotas.PausedSessions = 0, 0
	srv, stop, err := startSessionServer(ctx, scfg, reg, b)
	if err != nil {
		return err
	}
	defer stop()
	m := srv.Sessions()
	call := func(id, code string) (*engine.Result, error) {
		r, err := m.Run(ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
		if err == nil && r.Status != engine.StatusOK {
			err = fmt.Errorf("%s: %s", r.Status, r.Stderr)
		}
		return r, err
	}
	ids := make([]string, n)
	mem := make([]int64, n)
	created := time.Now()
	if err := forEach(n, func(i int) error {
		info, err := m.Create(ctx, role.Language, 0, sessions.Options{})
		if err != nil {
			return err
		}
		ids[i] = info.SessionID
		if _, err := call(ids[i], fmt.Sprintf("import json, re, collections\nnumber = %d", i)); err != nil {
			return err
		}
		r, err := call(ids[i], role.Memory)
		if err != nil {
			return err
		}
		mem[i], err = strconv.ParseInt(strings.TrimSpace(r.Value), 10, 64)
		return err
	}); err != nil {
		return fmt.Errorf("creating and using %d sessions: %w", n, err)
	}
	createdIn := time.Since(created)
	pausing := time.Now()
	deadline := pausing.Add(10*time.Minute + time.Duration(n)*2*time.Second)
	for paused := 0; paused < n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d sessions paused after %s", paused, n, time.Since(pausing))
		}
		time.Sleep(100 * time.Millisecond)
		paused = 0
		for _, s := range m.List(ctx) {
			if s.Paused {
				paused++
			}
		}
	}
	pausedIn := time.Since(pausing)
	disk := dirSize(dir)
	first := &Sample{Name: fmt.Sprintf("first answer of a paused session (%s), one of %d", how, n)}
	modes := map[string]int{}
	var mu sync.Mutex
	wrong := 0
	_ = forEach(n, func(i int) error {
		t := time.Now()
		r, err := call(ids[i], "number")
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil || r.Value != strconv.Itoa(i):
			wrong++
		default:
			first.add(d)
			if r.Resumed != nil {
				modes[r.Resumed.Mode]++
			}
		}
		return nil
	})
	first.Errs = wrong
	var live int64
	for _, v := range mem {
		live += v
	}
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(w, "\n## %d Python sessions on one host (%s pauses)\n\n", n, how)
	fmt.Fprintln(w, "| figure | value |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| created and used (%d at a time) | %.1f s, %.1f sessions/s |\n", manyParallel, createdIn.Seconds(), float64(n)/createdIn.Seconds())
	fmt.Fprintf(w, "| memory of a live idle session (its sandbox's cgroup, page cache included) | %s each, %s in all |\n", mib(live/int64(n)), mib(live))
	fmt.Fprintf(w, "| all paused by the reaper (each after a second idle), from the last one's use | %.1f s |\n", pausedIn.Seconds())
	fmt.Fprintf(w, "| disk of a paused session (%s and files' archive) | %s each, %s in all |\n", how, mib(disk/int64(n)), mib(disk))
	fmt.Fprintf(w, "| next call answered correctly | %d of %d (resumed: %v) |\n", len(first.Times), n, modes)
	fmt.Fprintf(w, "| time to the first answer after a pause, p50 / p90 / p99 / max | %s / %s / %s / %s ms |\n", ms(first.Quantile(.5)), ms(first.Quantile(.9)), ms(first.Quantile(.99)), ms(first.Quantile(1)))
	report.Rows = append(report.Rows, rowOf(role.Language, first))
	if wrong > 0 {
		return fmt.Errorf("%d of %d sessions did not answer their next call correctly", wrong, n)
	}
	return nil
}

// forEach calls f for 0..n-1, manyParallel at a time, and returns the
// first error.
func forEach(n int, f func(i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	next := make(chan int)
	for range min(manyParallel, n) {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}
