package sandbox_test

import (
	"os"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func TestCgroupOOMKillsReadsTheCgroupCounter(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		want          int
		ok            bool
	}{
		{"cgroup v1 oom_control", "oom_kill_disable 0\nunder_oom 0\noom_kill 2\n", 2, true},
		{"cgroup v2 memory.events", "low 0\nhigh 0\nmax 4\noom 1\noom_kill 1\n", 1, true},
		{"none yet", "oom_kill 0\n", 0, true},
		{"a kernel that does not count them", "oom_kill_disable 0\nunder_oom 0\n", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := dir + "/" + tt.name
			if err := os.WriteFile(path, []byte(tt.content), 0o600); err != nil {
				t.Fatal(err)
			}
			if got, ok := sandbox.CgroupOOMKills(path); got != tt.want || ok != tt.ok {
				t.Errorf("CgroupOOMKills = %d, %v; want %d, %v", got, ok, tt.want, tt.ok)
			}
		})
	}
	if got, ok := sandbox.CgroupOOMKills(dir + "/missing"); got != 0 || ok {
		t.Errorf("a missing file counts %d kills (%v)", got, ok)
	}
}
