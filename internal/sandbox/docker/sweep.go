package docker

import (
	"context"
	"debug/elf"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// owner identifies this server process in container labels, so that a later
// server can tell whether the process that made a container is still alive.
type owner struct {
	id    string // host/pid/start
	host  string
	pid   int
	start string // process start time in clock ticks since boot
}

func currentOwner() owner {
	host, _ := os.Hostname()
	// PIDs name processes only within a PID namespace: a server in a
	// container on the host's network has the host's name but other PIDs,
	// and must not take the host's servers for dead (nor they it).
	if ns, err := os.Readlink("/proc/self/ns/pid"); err == nil && !isInitialPIDNamespace(ns) {
		host += "+" + strings.NewReplacer("pid:[", "pidns", "]", "").Replace(ns)
	}
	pid := os.Getpid()
	start := sandbox.ProcessStart(pid)
	return owner{id: fmt.Sprintf("%s/%d/%s", host, pid, start), host: host, pid: pid, start: start}
}

// initialPIDNamespace is the inode of the host's PID namespace, fixed by
// the kernel (PROC_PID_INIT_INO).
const initialPIDNamespace = "pid:[4026531836]"

// isInitialPIDNamespace reports whether ns (a /proc/self/ns/pid link) is
// the host's: servers there keep the plain host name in their labels.
func isInitialPIDNamespace(ns string) bool { return ns == initialPIDNamespace }

// ownerAlive reports whether the server that labelled a container still runs.
// It can only tell for servers on this host; for others it answers true and
// the container's expiry decides.
func (b *Backend) ownerAlive(labels map[string]string) bool {
	if labels[LabelOwner] == b.owner.id {
		return true
	}
	if labels[LabelOwnerHost] != b.owner.host {
		return true
	}
	pid, err := strconv.Atoi(labels[LabelOwnerPID])
	if err != nil || pid <= 0 {
		return false
	}
	start := sandbox.ProcessStart(pid)
	return start != "" && start == labels[LabelOwnerBoot]
}

// Sweep removes our containers whose server is gone, and any of ours past
// its expiry whoever made it.
func (b *Backend) Sweep(ctx context.Context) (int, error) {
	list, err := ListContainers(ctx, b.cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelManaged+"=true"),
	})
	if err != nil {
		return 0, fmt.Errorf("listing sandbox containers: %w", err)
	}
	if n := sweepSockets(); n > 0 {
		b.log.Info("removed agent socket directories of servers that are gone", "count", n)
	}
	now := time.Now().Unix()
	removed := 0
	for _, c := range list.Items {
		if c.Labels[LabelOwner] == b.owner.id {
			continue // ours: removed by the run or the pool that made it
		}
		expires, _ := strconv.ParseInt(c.Labels[LabelExpires], 10, 64)
		expired := expires > 0 && now > expires
		if !expired && b.ownerAlive(c.Labels) {
			continue
		}
		_, err := b.cli.ContainerRemove(ctx, c.ID, client.ContainerRemoveOptions{Force: true, RemoveVolumes: true})
		if err != nil && !cerrdefs.IsNotFound(err) {
			b.log.Warn("removing left-behind sandbox", "container", c.ID[:12], "err", err)
			continue
		}
		removed++
		b.log.Info("removed left-behind sandbox", "container", c.ID[:12], "owner", c.Labels[LabelOwner], "expired", expired)
	}
	return removed, nil
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

// RemoveOwn removes every container this server made; it is for shutdown,
// after the runs in flight have ended.
func (b *Backend) RemoveOwn(ctx context.Context) (int, error) {
	list, err := ListContainers(ctx, b.cli, client.ContainerListOptions{
		All:     true,
		Filters: make(client.Filters).Add("label", LabelOwner+"="+b.owner.id),
	})
	if err != nil {
		return 0, fmt.Errorf("listing own sandbox containers: %w", err)
	}
	for _, c := range list.Items {
		b.remove(c.ID)
	}
	return len(list.Items), nil
}
