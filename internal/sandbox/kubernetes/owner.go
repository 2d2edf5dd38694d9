package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// CurrentOwner identifies this server process.
func CurrentOwner() Owner { return Owner{Owner: sandbox.CurrentOwner()} }

// alive reports whether the server described by a pod's annotations still
// runs, as far as this server can tell ([sandbox.Owner.Alive]): only servers
// on this host can be checked; for others the pod's expiry decides (or,
// in the cluster, its ownerReference).
func (o Owner) alive(annotations map[string]string) bool {
	return o.Owner.Alive(sandbox.RecordedOwner(annotations[AnnotationOwner], annotations[AnnotationOwnerHost],
		annotations[AnnotationOwnerPID], annotations[AnnotationOwnerBoot]))
}

// digest is a short, label-safe digest of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
