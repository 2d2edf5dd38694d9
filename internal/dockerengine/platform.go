package dockerengine

import "strings"

// GoArch names an architecture as Go and OCI platforms do, whether a
// daemon reports it as uname -m does (Docker: "x86_64", "aarch64") or as Go
// does (Podman: "amd64", "arm64").
func GoArch(machine string) string {
	switch strings.ToLower(machine) {
	case "x86_64", "x86-64", "amd64":
		return "amd64"
	case "aarch64", "arm64":
		return "arm64"
	}
	return machine
}
