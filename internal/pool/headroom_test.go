package pool

import (
	"errors"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/sandbox"
)

func TestHostHeadroomRefusesGrowthThatWouldEatTheReserve(t *testing.T) {
	tmpl := sandbox.Template{Resources: sandbox.Resources{MemoryMB: 512, PidsLimit: 128}}
	host := func(availKB, tasks string) func(string) ([]byte, error) {
		return func(p string) ([]byte, error) {
			switch p {
			case "/proc/meminfo":
				return []byte("MemTotal:       24000000 kB\nMemAvailable:   " + availKB + " kB\n"), nil
			case "/proc/loadavg":
				return []byte("3.10 2.00 1.50 4/" + tasks + " 12345\n"), nil
			case "/proc/sys/kernel/pid_max":
				return []byte("4194304\n"), nil
			case "/proc/sys/kernel/threads-max":
				return []byte("10000\n"), nil
			}
			return nil, errors.New("no such file")
		}
	}
	cases := []struct {
		name string
		read func(string) ([]byte, error)
		want string // in the error; empty: growth allowed
	}{
		{"room for one more", host("4194304", "800"), ""},                                             // 4096 MiB available
		{"memory below reserve plus the limit", host("1433600", "800"), "memory: 1400 MiB available"}, // 1400-512 < 1024
		{"tasks near the kernel's ceiling", host("4194304", "8900"), "pids: 8900 tasks running of the kernel's 10000"},
		{"nothing readable does not refuse", func(string) ([]byte, error) { return nil, errors.New("no /proc") }, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := hostHeadroom(tmpl, 1024, 1024, c.read)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Errorf("got %v, want an error containing %q", err, c.want)
			}
		})
	}
}
