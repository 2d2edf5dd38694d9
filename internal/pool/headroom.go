package pool

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// HostHeadroom returns a CanGrow that reads this host's memory and process
// table (the host of a local Docker daemon): a pool may add a sandbox while
// the memory available (MemAvailable) stays above reserveMB with one more
// sandbox using all of its memory limit, and the tasks (processes and
// threads) running stay below the kernel's ceiling (the lower of pid_max
// and threads-max) less reservePids, with one more sandbox at its pids
// limit. Where the files cannot be read, it does not refuse.
func HostHeadroom(reserveMB, reservePids int) func(sandbox.Template) error {
	return func(t sandbox.Template) error {
		return hostHeadroom(t, reserveMB, reservePids, os.ReadFile)
	}
}

func hostHeadroom(t sandbox.Template, reserveMB, reservePids int, read func(string) ([]byte, error)) error {
	if data, err := read("/proc/meminfo"); err == nil {
		if kb, ok := meminfoKB(data, "MemAvailable:"); ok {
			availMB := int(kb / 1024)
			if availMB-t.Resources.MemoryMB < reserveMB {
				return fmt.Errorf("memory: %d MiB available, and one more sandbox may use %d MiB, which would leave less than the %d MiB reserve (pool.reserve_memory_mb)",
					availMB, t.Resources.MemoryMB, reserveMB)
			}
		}
	}
	tasks, errTasks := loadavgTasks(read)
	ceiling, errCeiling := taskCeiling(read)
	if errTasks == nil && errCeiling == nil && tasks+t.Resources.PidsLimit > ceiling-reservePids {
		return fmt.Errorf("pids: %d tasks running of the kernel's %d, and one more sandbox may start %d, which would leave less than the %d reserve (pool.reserve_pids)",
			tasks, ceiling, t.Resources.PidsLimit, reservePids)
	}
	return nil
}

// meminfoKB reads a field of /proc/meminfo, in KiB.
func meminfoKB(data []byte, field string) (int64, bool) {
	for line := range bytes.Lines(data) {
		if rest, ok := bytes.CutPrefix(line, []byte(field)); ok {
			v, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(string(rest)), " kB"), 10, 64)
			return v, err == nil
		}
	}
	return 0, false
}

// loadavgTasks is the number of tasks on the host: the fourth field of
// /proc/loadavg is "running/total".
func loadavgTasks(read func(string) ([]byte, error)) (int, error) {
	data, err := read("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(data))
	if len(f) < 4 {
		return 0, fmt.Errorf("/proc/loadavg: unexpected %q", data)
	}
	_, total, ok := strings.Cut(f[3], "/")
	if !ok {
		return 0, fmt.Errorf("/proc/loadavg: unexpected %q", data)
	}
	return strconv.Atoi(total)
}

// taskCeiling is the most tasks the kernel allows: the lower of pid_max
// and threads-max.
func taskCeiling(read func(string) ([]byte, error)) (int, error) {
	ceiling := 0
	for _, p := range []string{"/proc/sys/kernel/pid_max", "/proc/sys/kernel/threads-max"} {
		data, err := read(p)
		if err != nil {
			return 0, err
		}
		v, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			return 0, fmt.Errorf("%s: %w", p, err)
		}
		if ceiling == 0 || v < ceiling {
			ceiling = v
		}
	}
	return ceiling, nil
}
