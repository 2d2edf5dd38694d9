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
	r := &manyRun{ctx: ctx, m: srv.Sessions(), n: n, how: how, ids: make([]string, n), mem: make([]int64, n)}
	if err := r.createAndUse(role); err != nil {
		return err
	}
	if err := r.waitAllPaused(); err != nil {
		return err
	}
	r.disk = dirSize(dir)
	r.answerEach()
	r.print(w)
	report.Rows = append(report.Rows, rowOf(role.Language, r.first))
	if r.first.Errs > 0 {
		return fmt.Errorf("%d of %d sessions did not answer their next call correctly", r.first.Errs, n)
	}
	return nil
}

// manyRun is one many-sessions section's sessions and what was measured
// of them, phase by phase.
type manyRun struct {
	ctx context.Context
	m   *sessions.Manager
	n   int
	how string // "checkpointed" or "replayed"

	ids       []string
	mem       []int64 // each live session's memory, bytes
	createdIn time.Duration
	pausedIn  time.Duration
	disk      int64
	first     *Sample
	modes     map[string]int // how the sessions were resumed
}

// call runs code in session id; a result other than ok is an error.
func (r *manyRun) call(id, code string) (*engine.Result, error) {
	res, err := r.m.Run(r.ctx, engine.Request{SessionID: id, Code: code}, engine.RunOptions{})
	if err == nil && res.Status != engine.StatusOK {
		err = fmt.Errorf("%s: %s", res.Status, res.Stderr)
	}
	return res, err
}

// createAndUse creates the sessions, each holding its number, and reads
// each one's memory.
func (r *manyRun) createAndUse(role *languages.SessionState) error {
	created := time.Now()
	if err := forEach(r.n, func(i int) error {
		info, err := r.m.Create(r.ctx, role.Language, 0, sessions.Options{})
		if err != nil {
			return err
		}
		r.ids[i] = info.SessionID
		if _, err := r.call(r.ids[i], fmt.Sprintf("import json, re, collections\nnumber = %d", i)); err != nil {
			return err
		}
		res, err := r.call(r.ids[i], role.Memory)
		if err != nil {
			return err
		}
		r.mem[i], err = strconv.ParseInt(strings.TrimSpace(res.Value), 10, 64)
		return err
	}); err != nil {
		return fmt.Errorf("creating and using %d sessions: %w", r.n, err)
	}
	r.createdIn = time.Since(created)
	return nil
}

// waitAllPaused waits until the reaper has paused every session.
func (r *manyRun) waitAllPaused() error {
	pausing := time.Now()
	deadline := pausing.Add(10*time.Minute + time.Duration(r.n)*2*time.Second)
	for paused := 0; paused < r.n; {
		if time.Now().After(deadline) {
			return fmt.Errorf("%d of %d sessions paused after %s", paused, r.n, time.Since(pausing))
		}
		time.Sleep(100 * time.Millisecond) // polling the sessions' listing, with a deadline
		paused = 0
		for _, s := range r.m.List(r.ctx) {
			if s.Paused {
				paused++
			}
		}
	}
	r.pausedIn = time.Since(pausing)
	return nil
}

// answerEach calls each paused session again, which resumes it; it must
// answer its own number. A wrong or failed answer is counted in first.Errs.
func (r *manyRun) answerEach() {
	r.first = &Sample{Name: fmt.Sprintf("first answer of a paused session (%s), one of %d", r.how, r.n)}
	r.modes = map[string]int{}
	var mu sync.Mutex
	_ = forEach(r.n, func(i int) error {
		t := time.Now()
		res, err := r.call(r.ids[i], "number")
		d := time.Since(t)
		mu.Lock()
		defer mu.Unlock()
		switch {
		case err != nil || res.Value != strconv.Itoa(i):
			r.first.Errs++
		default:
			r.first.add(d)
			if res.Resumed != nil {
				r.modes[res.Resumed.Mode]++
			}
		}
		return nil
	})
}

func (r *manyRun) print(w io.Writer) {
	var live int64
	for _, v := range r.mem {
		live += v
	}
	n := int64(r.n)
	mib := func(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }
	fmt.Fprintf(w, "\n## %d Python sessions on one host (%s pauses)\n\n", r.n, r.how)
	fmt.Fprintln(w, "| figure | value |")
	fmt.Fprintln(w, "|---|---|")
	fmt.Fprintf(w, "| created and used (%d at a time) | %.1f s, %.1f sessions/s |\n", manyParallel, r.createdIn.Seconds(), float64(r.n)/r.createdIn.Seconds())
	fmt.Fprintf(w, "| memory of a live idle session (its sandbox's cgroup, page cache included) | %s each, %s in all |\n", mib(live/n), mib(live))
	fmt.Fprintf(w, "| all paused by the reaper (each after a second idle), from the last one's use | %.1f s |\n", r.pausedIn.Seconds())
	fmt.Fprintf(w, "| disk of a paused session (%s and files' archive) | %s each, %s in all |\n", r.how, mib(r.disk/n), mib(r.disk))
	fmt.Fprintf(w, "| next call answered correctly | %d of %d (resumed: %v) |\n", len(r.first.Times), r.n, r.modes)
	fmt.Fprintf(w, "| time to the first answer after a pause, p50 / p90 / p99 / max | %s / %s / %s / %s ms |\n", ms(r.first.Quantile(.5)), ms(r.first.Quantile(.9)), ms(r.first.Quantile(.99)), ms(r.first.Quantile(1)))
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
