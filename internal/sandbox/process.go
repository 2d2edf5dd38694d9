package sandbox

import (
	"fmt"
	"os"
	"strings"
)

// ProcessStart reads field 22 of /proc/PID/stat, the process's start in
// clock ticks since boot: with the PID it names one process for the life
// of the boot, even after the PID is reused. Backends record it beside the
// server's PID on their sandboxes, so that a later server can tell whether
// the one that made them still runs. It is "" when the process is gone.
func ProcessStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
}
