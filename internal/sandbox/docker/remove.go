package docker

import (
	"context"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
)

// oomKilled waits briefly for the container to stop and reports whether the
// daemon saw it hit its memory limit.
func (b *Backend) oomKilled(ctx context.Context, id string) bool {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 3*time.Second)
	defer cancel()
	w := b.cli.ContainerWait(wctx, id, client.ContainerWaitOptions{Condition: container.WaitConditionNotRunning})
	select {
	case <-w.Result:
	case err := <-w.Error:
		b.log.Debug("waiting for the sandbox to stop", "id", id, "err", err) // the inspect below tells the state
	}
	ins, err := b.cli.ContainerInspect(wctx, id, client.ContainerInspectOptions{})
	if err != nil || ins.Container.State == nil {
		return false
	}
	return ins.Container.State.OOMKilled
}

func (b *Backend) remove(id string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for attempt := range 3 {
		_, err := b.cli.ContainerRemove(ctx, id, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err == nil || cerrdefs.IsNotFound(err) {
			return
		}
		b.log.Warn("removing sandbox container", "container", id[:12], "attempt", attempt+1, "err", err)
		time.Sleep(200 * time.Millisecond)
	}
	// The periodic sweep removes it once its expiry passes.
}
