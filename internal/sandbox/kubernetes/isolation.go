package kubernetes

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

// IsolationSupport says whether pods of isolation i can be made: gVisor's
// run under the RuntimeClass gvisor.runtime_class_name, which the cluster
// must have (its handler runsc in the nodes' container runtime).
func (b *Backend) IsolationSupport(i sandbox.Isolation) error {
	if i.Or() != sandbox.IsolationGVisor {
		return nil
	}
	class := b.opts.Pod.GVisorRuntimeClassName
	if class == "" {
		return fmt.Errorf("%w: isolation gvisor: no RuntimeClass is configured (gvisor.runtime_class_name)", sandbox.ErrUnsupported)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := b.cs.NodeV1().RuntimeClasses().Get(ctx, class, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("%w: isolation gvisor: RuntimeClass %q on %s: %v; create it with handler runsc (docs/KUBERNETES.md) or set gvisor.runtime_class_name", sandbox.ErrUnsupported, class, b.server, err)
	}
	return nil
}
