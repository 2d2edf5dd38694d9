package kubernetes

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// CurrentOwner identifies this server process.
func CurrentOwner() Owner {
	host, _ := os.Hostname()
	pid := os.Getpid()
	start := processStart(pid)
	return Owner{ID: fmt.Sprintf("%s/%d/%s", host, pid, start), Host: host, PID: pid, Start: start}
}

// processStart reads field 22 of /proc/PID/stat: with the PID it names one
// process for the life of the boot, even after the PID is reused.
func processStart(pid int) string {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return ""
	}
	// The command name (field 2) may hold spaces; fields resume after ')'.
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return ""
	}
	fields := strings.Fields(s[i+1:])
	if len(fields) < 20 {
		return ""
	}
	return fields[19]
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
	start := processStart(pid)
	return start != "" && start == annotations[AnnotationOwnerBoot]
}

// digest is a short, label-safe digest of s.
func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}
