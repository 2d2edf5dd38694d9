package testutil

import (
	"fmt"
	"os"
	"testing"
)

// SkipUnlessCI skips a test whose precondition (Docker, root on the Docker
// host, a local daemon, ...) this machine lacks, except under CI=true: CI's
// machines have every precondition, so there a missing one means the
// behaviour went unproven, and the test fails instead of passing silently.
func SkipUnlessCI(t testing.TB, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("required under CI=true: %s", why)
	}
	t.Skip(why + " (CI=true makes this a failure)")
}
