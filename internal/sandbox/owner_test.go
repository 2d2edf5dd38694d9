package sandbox

import (
	"os"
	"strconv"
	"testing"
)

func TestAnOwnerIsAliveWhileItsProcessRunsOnThisHost(t *testing.T) {
	self := CurrentOwner()
	parent := os.Getppid()
	for _, c := range []struct {
		name  string
		maker Owner
		alive bool
	}{
		{"this server itself", self, true},
		{"a server of another host, which cannot be checked", Owner{ID: "elsewhere/1/1", Host: "another-host", PID: 1, Start: "1"}, true},
		{"a running process of this host that started when recorded",
			RecordedOwner("parent", self.Host, itoa(parent), ProcessStart(parent)), true},
		{"a PID of this host that now names another process", Owner{ID: "reused", Host: self.Host, PID: parent, Start: "1"}, false},
		{"a PID that names no process", Owner{ID: "gone", Host: self.Host, PID: 1 << 22, Start: "1"}, false},
		{"a recorded PID that is not a number", RecordedOwner("garbled", self.Host, "x", "1"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := self.Alive(c.maker); got != c.alive {
				t.Errorf("Alive(%+v) = %v, want %v", c.maker, got, c.alive)
			}
		})
	}
}

func TestAnOwnerReadBackFromANameIsJudgedAsFromLabels(t *testing.T) {
	self := CurrentOwner()
	parent := os.Getppid()
	for _, c := range []struct {
		name                string
		pid, start, hostTag string
		alive               bool
	}{
		{"this server's own fields", itoa(self.PID), self.Start, self.HostTag(), true},
		{"a running process of this host", itoa(parent), ProcessStart(parent), self.HostTag(), true},
		{"a gone process of this host", "4194304", "1", self.HostTag(), false},
		{"a gone process of another host (or PID namespace)", "4194304", "1", Owner{Host: "another-host"}.HostTag(), true},
		{"a name without a host tag counts as this host's", "4194304", "1", "", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := self.AliveNamed(c.pid, c.start, c.hostTag); got != c.alive {
				t.Errorf("AliveNamed(%q, %q, %q) = %v, want %v", c.pid, c.start, c.hostTag, got, c.alive)
			}
		})
	}
}

func TestAServerInAContainersPIDNamespaceIsNamedApartFromTheHost(t *testing.T) {
	if !isInitialPIDNamespace("pid:[4026531836]") || isInitialPIDNamespace("pid:[4026532201]") {
		t.Error("the host's PID namespace is not told from a container's")
	}
}

func itoa(n int) string { return strconv.Itoa(n) }
