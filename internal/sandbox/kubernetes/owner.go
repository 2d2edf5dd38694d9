package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// CurrentOwner identifies this server process.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start := sandbox.ProcessStart(pid)
	return Owner{ID: fmt.Sprintf("%s/%d/%s", host, pid, start), Host: host, PID: pid, Start: start}
}

// alive reports whether the server described by a pod's annotations still
// runs, as far as this server can tell: only servers on this host can be
// checked; for others it answers true, and the pod's expiry decides (or,
// in the cluster, its ownerReference).
func (o Owner) alive(annotations map[string]string) bool {
	if annotations[AnnotationOwner] == o.ID {
		return true
	}
	if annotations[AnnotationOwnerHost] != o.Host {
		return true
	}
	pid, err := strconv.Atoi(annotations[AnnotationOwnerPID])
	if err != nil || pid <= 0 {
		return false
	}
	start := sandbox.ProcessStart(pid)
	return start != "" && start == annotations[AnnotationOwnerBoot]
}

// digest is a short, label-safe digest of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
