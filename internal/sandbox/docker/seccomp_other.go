//go:build !linux

package docker

// writeDockerSeccomp has no profile to write where Docker's default profile
// is not built (it is Linux-only): Podman's own profile then stays in force,
// and dockerengine.Engine.Limits says so.
func writeDockerSeccomp(string) (string, error) { return "", nil }
