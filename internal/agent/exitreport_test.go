package agent

import (
	"strings"
	"testing"
)

func TestAnExitReportIsACodeAndOptionallyAPeakAndACPUTimeOnOneLine(t *testing.T) {
	for _, c := range []struct {
		name   string
		report string
		ok     bool
		want   exitReport
	}{
		{"a code alone", "0\n", true, exitReport{code: 0}},
		{"a code and a peak", "3 48120\n", true, exitReport{code: 3, maxRSSKB: 48120}},
		{"the largest code", "255 1\n", true, exitReport{code: 255, maxRSSKB: 1}},
		{"a code above 255 is no report", "256\n", false, exitReport{}},
		{"a negative code is no report", "-1 10\n", false, exitReport{}},
		{"a negative peak is no report", "0 -10\n", false, exitReport{}},
		{"words are no report", "ok\n", false, exitReport{}},
		{"a code, a peak and a CPU time", "1 10 20\n", true, exitReport{code: 1, maxRSSKB: 10, cpuTimeMs: 20}},
		{"a negative CPU time is no report", "0 10 -20\n", false, exitReport{}},
		{"a fourth field is no report", "0 10 20 30\n", false, exitReport{}},
		{"two spaces are no report", "0  10\n", false, exitReport{}},
		{"bytes after the newline are no report", "0 10\nx", false, exitReport{}},
		{"no newline before the end is no report", "0 10", false, exitReport{}},
		{"an empty stream is no report", "", false, exitReport{}},
		{"a line longer than a report is no report", strings.Repeat("1", 40) + "\n", false, exitReport{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, ok := readExitReport(strings.NewReader(c.report))
			if ok != c.ok || got != c.want {
				t.Errorf("readExitReport(%q) = %+v, %v; want %+v, %v", c.report, got, ok, c.want, c.ok)
			}
		})
	}
}
