//go:build linux

package crun

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// CRIU freezes a sandbox's cgroup before its dump, then polls the freezer
// every 100 ms: a cgroup that is not frozen at its first look costs a
// whole step, about a third of a small session's pause. The backend
// freezes the cgroup itself first, looking every millisecond; CRIU then
// finds it frozen, seizes its tasks at once, and thaws it when the dump
// is done (the tasks stay seized, and the dump ends them).

// freezeWait bounds the backend's own wait for the freezer: past it, CRIU
// waits as it always does.
const freezeWait = 2 * time.Second

// freezer is sandbox id's freezer: its state file, and what it reads and
// takes for frozen and thawed, on cgroup v1 or v2.
func (b *Backend) freezer(id string) (control, frozen, thawed string, read func() (string, error)) {
	if b.cgroupV2 {
		dir := filepath.Join("/sys/fs/cgroup", cgroupParent, id)
		return filepath.Join(dir, "cgroup.freeze"), "1", "0", func() (string, error) {
			data, err := os.ReadFile(filepath.Join(dir, "cgroup.events")) // the sandbox's cgroup, the server's
			if err != nil {
				return "", err
			}
			for line := range strings.SplitSeq(string(data), "\n") {
				if v, ok := strings.CutPrefix(line, "frozen "); ok {
					return v, nil
				}
			}
			return "", errors.New("cgroup.events has no frozen line")
		}
	}
	file := filepath.Join("/sys/fs/cgroup", "freezer", cgroupParent, id, "freezer.state")
	return file, "FROZEN", "THAWED", func() (string, error) {
		data, err := os.ReadFile(file) // the sandbox's cgroup, the server's
		return strings.TrimSpace(string(data)), err
	}
}

// freeze freezes sandbox id's cgroup and waits, at most freezeWait, until
// it is; it says whether it froze it (the caller thaws it if the
// checkpoint fails).
func (b *Backend) freeze(id string) bool {
	control, frozen, _, read := b.freezer(id)
	if err := os.WriteFile(control, []byte(frozen), 0o644); err != nil {
		return false
	}
	deadline := time.Now().Add(freezeWait)
	for time.Now().Before(deadline) {
		if state, err := read(); err != nil || state == frozen {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return true
}

// thaw thaws sandbox id's cgroup: a frozen task cannot even be killed.
func (b *Backend) thaw(id string) {
	control, _, thawed, _ := b.freezer(id)
	_ = os.WriteFile(control, []byte(thawed), 0o644)
}
