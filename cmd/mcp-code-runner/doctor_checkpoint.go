package main

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"time"
)

// checkpoint says whether the host could checkpoint and restore a
// sandbox's memory (CRIU through crun). The server does not do it today:
// fork_session rebuilds a session's state by replaying its cells, on every
// host; the line tells an operator what this host would allow.
func (d *doctor) checkpoint(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var why []string
	if out, err := exec.CommandContext(ctx, "crun", "--version").Output(); err != nil {
		why = append(why, "crun is not installed")
	} else if !strings.Contains(string(out), "+CRIU") {
		why = append(why, "crun --version lacks +CRIU")
	}
	if _, err := exec.LookPath("criu"); err != nil {
		why = append(why, "criu is not installed")
	} else if out, err := exec.CommandContext(ctx, "criu", "check").CombinedOutput(); err != nil {
		msg := strings.TrimSpace(string(out))
		if i := strings.LastIndexByte(msg, '\n'); i >= 0 {
			msg = msg[i+1:]
		}
		var ee *exec.ExitError
		if msg == "" || !errors.As(err, &ee) {
			msg = err.Error()
		}
		why = append(why, "`criu check` fails: "+msg)
	}
	if len(why) > 0 {
		d.info("checkpoint/restore of sessions is unavailable on this host (%s); fork_session rebuilds state by replaying cells", strings.Join(why, "; "))
		return
	}
	d.info("checkpoint/restore is possible on this host (crun +CRIU, criu check passes), but the server does not use it yet; fork_session replays cells")
}
