package dockerengine

import (
	"fmt"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// PodmanNproc is the process limit sandboxes get on Podman, which otherwise
// raises RLIMIT_NPROC to its maximum and fails to start a container where
// it may not (a host without CAP_SYS_RESOURCE). The limit counts the
// processes of the sandbox user in all sandboxes together, so it is far
// above any one sandbox's pids limit; the pids limit bounds each.
const PodmanNproc = 8192

// TmpfsOwner is the tmpfs option that gives a mount to the sandbox user:
// uid= and gid= on Docker; Podman refuses those, and its own U gives the
// mount to the container's user.
func TmpfsOwner(podman bool) string {
	if podman {
		return "U"
	}
	return fmt.Sprintf("uid=%d,gid=%d", wire.SandboxUID, wire.SandboxGID)
}
