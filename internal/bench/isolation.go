package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-code-runner/mcp-code-runner/internal/config"
	"github.com/mcp-code-runner/mcp-code-runner/internal/languages"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
	"github.com/mcp-code-runner/mcp-code-runner/internal/server"
)

// Isolated is a backend whose every sandbox is made with one isolation,
// whatever its template says: a side of the isolations' comparison, on one
// backend.
type Isolated struct {
	sandbox.Backend
	Isolation sandbox.Isolation
}

// Create makes t's sandbox under the side's isolation.
func (b Isolated) Create(ctx context.Context, t sandbox.Template) (sandbox.Sandbox, error) {
	t.Isolation = b.Isolation
	return b.Backend.Create(ctx, t)
}

// IsolationSides are the sides of the isolations' comparison on backend b:
// one per isolation, named after it.
func IsolationSides(b sandbox.Backend, isolations []sandbox.Isolation) []Backend {
	sides := make([]Backend, 0, len(isolations))
	for _, i := range isolations {
		sides = append(sides, Backend{Name: string(i), Sandbox: Isolated{Backend: b, Isolation: i}})
	}
	return sides
}

// IsolationMemory prints, per side, the memory of a full warm pool of n
// idle sandboxes of each language, read from the sandboxes' own cgroups
// (usage less page cache), which hold gVisor's kernel too for a gVisor
// sandbox.
func IsolationMemory(ctx context.Context, cfg config.Config, reg *languages.Registry, sides []Backend, langs []string, n int, w io.Writer) error {
	fmt.Fprintf(w, "\n| isolation | idle warm sandbox | sandboxes | MiB each |\n|---|---|---|---|\n")
	for _, s := range sides {
		for _, name := range langs {
			each, count, err := poolCgroupMemory(ctx, cfg, reg, s.Sandbox, name, n)
			if err != nil {
				return fmt.Errorf("%s, idle %s: %w", s.Name, name, err)
			}
			fmt.Fprintf(w, "| %s | %s | %d | %.1f |\n", s.Name, name, count, each)
		}
	}
	return nil
}

// poolCgroupMemory fills a warm pool of n sandboxes of lang on b and
// returns their mean memory in MiB, from the cgroups that appeared.
func poolCgroupMemory(ctx context.Context, cfg config.Config, reg *languages.Registry, b sandbox.Backend, lang string, n int) (float64, int, error) {
	before := sandboxCgroups()
	c := cfg
	c.Pool.Size, c.Pool.Sizes, c.Pool.MaxSize, c.Pool.MaxSizes = 0, []string{fmt.Sprintf("%s=%d", lang, n)}, 0, nil
	srv, stop, err := startServer(ctx, server.Parts{Config: c, Registry: reg, Backend: b})
	if err != nil {
		return 0, 0, err
	}
	defer stop()
	if err := waitPoolFull(ctx, srv.Engine(), lang, n, 2*time.Minute); err != nil {
		return 0, 0, err
	}
	// What the interpreters do just after they start is not what an idle
	// sandbox holds.
	time.Sleep(2 * time.Second)
	var total int64
	count := 0
	for id := range sandboxCgroups() {
		if before[id] {
			continue
		}
		used, err := cgroupMemory(id)
		if err != nil {
			continue // removed meanwhile
		}
		total += used
		count++
	}
	if count == 0 {
		return 0, 0, errors.New("no sandbox cgroup appeared (the memory table reads the crun backend's cgroups)")
	}
	return float64(total) / float64(count) / (1 << 20), count, nil
}

// sandboxCgroups are the crun backend's sandboxes' memory cgroups now.
func sandboxCgroups() map[string]bool {
	ids := map[string]bool{}
	for _, dir := range []string{"/sys/fs/cgroup/memory/mcp-code-runner", "/sys/fs/cgroup/mcp-code-runner"} {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() && strings.HasPrefix(e.Name(), "mcr-") {
				ids[e.Name()] = true
			}
		}
	}
	return ids
}

// cgroupMemory is the memory a crun sandbox's cgroup holds, less its page
// cache (cgroup v1 and v2).
func cgroupMemory(id string) (int64, error) {
	const parent = "mcp-code-runner"
	read := func(path string) (int64, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return 0, err
		}
		return strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
	}
	stat := func(path, key string) int64 {
		data, _ := os.ReadFile(path)
		for line := range strings.SplitSeq(string(data), "\n") {
			if v, ok := strings.CutPrefix(line, key+" "); ok {
				n, _ := strconv.ParseInt(v, 10, 64)
				return n
			}
		}
		return 0
	}
	if used, err := read(filepath.Join("/sys/fs/cgroup/memory", parent, id, "memory.usage_in_bytes")); err == nil {
		return used - stat(filepath.Join("/sys/fs/cgroup/memory", parent, id, "memory.stat"), "cache"), nil
	}
	if used, err := read(filepath.Join("/sys/fs/cgroup", parent, id, "memory.current")); err == nil {
		return used - stat(filepath.Join("/sys/fs/cgroup", parent, id, "memory.stat"), "file"), nil
	}
	return 0, errors.New("no cgroup memory file of sandbox " + id + " (the memory table reads the crun backend's cgroups)")
}

// IsolationSessions prints, per side, fork, pause and resume of the
// session_state role's session, and the memory idle sessions with their
// data libraries hold against paused ones: on the crun backend a
// container's pause checkpoints (where the tools work) and a gVisor
// sandbox's replays.
func IsolationSessions(ctx context.Context, w io.Writer, cfg config.Config, reg *languages.Registry, sides []Backend, runs, sessions int) error {
	var report Report
	for _, s := range sides {
		fmt.Fprintf(w, "\n### Sessions under %s\n", s.Name)
		if err := sessionStateSection(ctx, w, cfg, reg, s.Sandbox, nil, runs, &report); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if err := sessionMemorySection(ctx, w, cfg, reg, s.Sandbox, sessions, &report); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
	}
	return nil
}
