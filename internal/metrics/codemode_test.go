package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestCodeModeCallsAreCountedByServerToolAndStatusWithTheirBytes(t *testing.T) {
	m := New(Options{})
	count := m.CodeMode()
	count("fs", "read_text_file", "ok", 3*time.Millisecond, 100)
	count("fs", "read_text_file", "ok", 4*time.Millisecond, 50)
	count("fs", "write_file", "refused", time.Millisecond, 0)
	want := `
# HELP mcr_code_mode_calls_total Tool calls runs' programs made through the server (code mode), by MCP server, tool and status.
# TYPE mcr_code_mode_calls_total counter
mcr_code_mode_calls_total{server="fs",status="ok",tool="read_text_file"} 2
mcr_code_mode_calls_total{server="fs",status="refused",tool="write_file"} 1
# HELP mcr_code_mode_result_bytes_total Bytes of the tool results that entered sandboxes, by MCP server.
# TYPE mcr_code_mode_result_bytes_total counter
mcr_code_mode_result_bytes_total{server="fs"} 150
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "mcr_code_mode_calls_total", "mcr_code_mode_result_bytes_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "mcr_code_mode_call_seconds"); err != nil || n != 1 {
		t.Errorf("call seconds series: %d, %v", n, err)
	}
}
