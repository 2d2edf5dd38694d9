package dockerengine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// RacedWithExit reports whether err is one of Podman's transient answers
// for a container whose process exits, or which is removed, while the
// engine reads it: "read /proc/N/cgroup: no such process" from a list or a
// wait (podman#16383, fixed in Podman 4.4; Debian 12 ships 4.3), and "no
// such container" for one removed during a list (podman#11810). Docker does
// not answer this way. Asking again a moment later gets the settled state.
func RacedWithExit(err error) bool {
	if err == nil {
		return false
	}
	msg := err.Error()
	return strings.Contains(msg, "/cgroup: no such process") ||
		(strings.Contains(msg, "does not exist in database") && strings.Contains(msg, "no such container"))
}

// raceRetries bounds how often a call that raced with an exit is asked
// again; the state settles within one or two.
const raceRetries = 8

// raceBackoff is the pause before asking again, growing with each attempt.
func raceBackoff(ctx context.Context, attempt int) error {
	t := time.NewTimer(time.Duration(attempt) * 25 * time.Millisecond)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// ListContainers is cli.ContainerList that asks again when the engine's
// list raced with a container's exit or removal (RacedWithExit), so that a
// sweep, a shutdown or a check for leftovers does not fail on a container
// that is merely going away.
func ListContainers(ctx context.Context, cli *client.Client, opts client.ContainerListOptions) (client.ContainerListResult, error) {
	for attempt := 1; ; attempt++ {
		list, err := cli.ContainerList(ctx, opts)
		if !RacedWithExit(err) || attempt == raceRetries {
			return list, err
		}
		if werr := raceBackoff(ctx, attempt); werr != nil {
			return list, err
		}
	}
}

// WaitExit waits for container id to exit and returns its status, as
// wait does (a wait the caller started before starting the container). A
// wait that raced with the exit (RacedWithExit) is answered from the
// container's state instead, which the engine has settled by then.
func WaitExit(ctx context.Context, cli *client.Client, id string, wait client.ContainerWaitResult) (int64, error) {
	select {
	case res := <-wait.Result:
		if res.Error != nil && res.Error.Message != "" {
			return 0, errors.New(res.Error.Message)
		}
		return res.StatusCode, nil
	case err := <-wait.Error:
		if !RacedWithExit(err) {
			return 0, err
		}
		for attempt := 1; ; attempt++ {
			ins, ierr := cli.ContainerInspect(ctx, id, client.ContainerInspectOptions{})
			if ierr == nil && ins.Container.State != nil && ins.Container.State.Status == container.StateExited {
				return int64(ins.Container.State.ExitCode), nil
			}
			if attempt == raceRetries {
				if ierr != nil {
					return 0, fmt.Errorf("%w (and then inspecting the container: %v)", err, ierr)
				}
				return 0, err
			}
			if werr := raceBackoff(ctx, attempt); werr != nil {
				return 0, err
			}
		}
	}
}
