//go:build !fast

package e2e

import (
	"os"
	"testing"
)

// TestMain runs every server these tests start on the docker backend
// (MCR_BACKEND, unless the run sets it): they find a server's sandboxes
// through Docker's labels. The default backend's batteries are the
// containment and egress suites under MCR_TEST_BACKEND=default, and
// e2e/tests/crun-backend.test.mjs.
func TestMain(m *testing.M) {
	if os.Getenv("MCR_BACKEND") == "" {
		_ = os.Setenv("MCR_BACKEND", "docker")
	}
	os.Exit(m.Run())
}
