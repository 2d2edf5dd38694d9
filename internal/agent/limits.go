package agent

import (
	"encoding/json"
	"fmt"
	"syscall"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// ApplyLimits sets the per-process limits of spec ([wire.Limits] as JSON; ""
// sets none) on the agent, soft and hard alike, so that every process of the
// sandbox inherits them whatever the backend. It only lowers a limit: one
// the sandbox already holds lower stays.
func ApplyLimits(spec string) error {
	if spec == "" {
		return nil
	}
	var l wire.Limits
	if err := json.Unmarshal([]byte(spec), &l); err != nil {
		return fmt.Errorf("decoding %s: %w", wire.LimitsEnv, err)
	}
	if l.NoFile > 0 {
		// syscall.Setrlimit, not unix's: it also tells the runtime not to
		// give the stages the soft limit the agent started with.
		if err := lower(syscall.RLIMIT_NOFILE, uint64(l.NoFile)); err != nil {
			return fmt.Errorf("limiting open files to %d: %w", l.NoFile, err)
		}
	}
	if l.FileSizeBytes > 0 {
		if err := lower(syscall.RLIMIT_FSIZE, uint64(l.FileSizeBytes)); err != nil {
			return fmt.Errorf("limiting file size to %d bytes: %w", l.FileSizeBytes, err)
		}
	}
	return nil
}

// lower sets resource's soft and hard limits to n, or to the hard limit
// if that is lower.
func lower(resource int, n uint64) error {
	var cur syscall.Rlimit
	if err := syscall.Getrlimit(resource, &cur); err != nil {
		return err
	}
	n = min(n, cur.Max)
	return syscall.Setrlimit(resource, &syscall.Rlimit{Cur: n, Max: n})
}
