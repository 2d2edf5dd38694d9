package docker

import (
	"context"
	"debug/elf"
	"fmt"
	"strconv"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/dockerengine"
	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// ownerAlive reports whether the server that labelled a container still
// runs ([sandbox.Owner.Alive]).
func (b *Backend) ownerAlive(labels map[string]string) bool {
	return b.owner.Alive(sandbox.RecordedOwner(labels[LabelOwner], labels[LabelOwnerHost], labels[LabelOwnerPID], labels[LabelOwnerBoot]))
}

// keptSandboxes are the sandboxes of stopped servers that the sweep keeps.
type keptSandboxes struct {
	ids  map[string]bool // containers
	dirs map[string]bool // their agents' socket directories
}

// SetKeep makes the sweep keep the sandboxes that keep lists (the live
// sessions' sandboxes, which the state store names), though their server is
// gone: a server re-attaches to them; and the session sandboxes of another
// store while their agents wait for one. It is called before the first
// sandbox and the first sweep.
func (b *Backend) SetKeep(keep sandbox.Keep) { b.keep = keep }

func (b *Backend) kept(ctx context.Context) (keptSandboxes, error) {
	k := keptSandboxes{ids: map[string]bool{}, dirs: map[string]bool{}}
	if b.keep.Sandboxes == nil {
		return k, nil
	}
	refs, err := b.keep.Sandboxes(ctx)
	for _, r := range refs {
		k.ids[r.ID], k.dirs[r.SocketDir] = true, true
	}
	return k, err
}

// adopt marks a container another server made as this server's (a
// session re-attached to): the sweep keeps it while this server runs.
func (b *Backend) adopt(id string) { b.adoptedIDs.Store(id, true) }

// disown forgets an adopted container once it is removed.
func (b *Backend) disown(id string) { b.adoptedIDs.Delete(id) }

func (b *Backend) adopted(id string) bool {
	_, ok := b.adoptedIDs.Load(id)
	return ok
}

// Sweep removes our containers whose server is gone, and any of ours past
// its expiry whoever made it.
func (b *Backend) Sweep(ctx context.Context) (int, error) {
	list, err := dockerengine.ListContainers(ctx, b.cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true"),
	})
	if err != nil {
		return 0, fmt.Errorf("listing sandbox containers: %w", err)
	}
	keep, keepErr := b.kept(ctx)
	if keepErr != nil {
		b.log.Warn("the sweep keeps every sandbox of a stopped server this time: which of them live sessions own is unknown", "err", keepErr)
	}
	now := time.Now().Unix()
	removed := 0
	for _, c := range list.Items {
		if c.Labels[LabelOwner] == b.owner.ID || b.adopted(c.ID) {
			continue // ours: removed by the run or the pool that made it, or the session re-attached to
		}
		expires, _ := strconv.ParseInt(c.Labels[LabelExpires], 10, 64)
		expired := expires > 0 && now > expires
		if !expired && (keepErr != nil || keep.ids[c.ID] || b.otherStores(c) || b.ownerAlive(c.Labels)) {
			keepSocketsOf(c, keep.dirs)
			continue // its server runs, or a live session's record names it (or may, in a store not ours): the next server re-attaches to it
		}
		_, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			b.log.Warn("removing left-behind sandbox", "container", c.ID[:12], "err", err)
			keepSocketsOf(c, keep.dirs)
			continue
		}
		removed++
		b.log.Info("removed left-behind sandbox", "container", c.ID[:12], "owner", c.Labels[LabelOwner], "expired", expired)
	}
	// After the containers: a socket directory that a container left in
	// place still mounts is kept with it.
	if n := sweepSockets(b.owner, keep.dirs, keepErr != nil); n > 0 {
		b.log.Info("removed agent socket directories of servers that are gone", "count", n)
	}
	return removed, nil
}

// otherStores says whether c is a session's sandbox that a live session
// recorded in another state store may own: one marked with that store,
// still running (its agent waits for a server to re-attach to it; once it
// has given up, nobody can).
func (b *Backend) otherStores(c container.Summary) bool {
	store := c.Labels[LabelStore]
	return store != "" && store != b.keep.Store && c.State == container.StateRunning
}

// keepSocketsOf adds the agent socket directory that c mounts, if any, to
// dirs.
func keepSocketsOf(c container.Summary, dirs map[string]bool) {
	for _, m := range c.Mounts {
		if m.Destination == SocketDir {
			dirs[m.Source] = true
		}
	}
}

// checkStatic refuses an agent binary that needs a dynamic loader: the
// sandbox images may not carry the host's C library.
func checkStatic(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("agent binary %s: %w (build it with `make build`)", path, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("agent binary %s is dynamically linked; build it with CGO_ENABLED=0 (`make build` does)", path)
		}
	}
	return nil
}

// RemoveOwn removes every container this process made for instance; it is
// for a server's shutdown, after the runs in flight have ended.
func (b *Backend) RemoveOwn(ctx context.Context, instance string) (int, error) {
	list, err := dockerengine.ListContainers(ctx, b.cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwner+"="+b.owner.ID),
	})
	if err != nil {
		return 0, fmt.Errorf("listing own sandbox containers: %w", err)
	}
	removed := 0
	for _, c := range list.Items {
		if c.Labels[LabelInstance] != instance {
			continue // another server's of this process
		}
		b.remove(c.ID)
		removed++
	}
	return removed, nil
}
