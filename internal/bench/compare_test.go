package bench

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCompareGivesRatiosOfRowsOfTheSameLanguageAndPath(t *testing.T) {
	ref := Report{Time: "then", Rows: []Row{
		{Language: "python", Path: "warm", P50: 10, P99: 20},
		{Language: "bash", Path: "warm", P50: 4, P99: 8},
	}}
	path := filepath.Join(t.TempDir(), "ref.json")
	data, _ := json.Marshal(ref)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	loaded, err := loadReport(path)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	compare(&out, Report{Rows: []Row{{Language: "python", Path: "warm", P50: 5, P99: 30}, {Language: "javascript", Path: "warm", P50: 9}}}, *loaded, path)
	got := out.String()
	if !strings.Contains(got, "| python | warm | 5.0 | 10.0 | 0.50x | 30.0 | 20.0 | 1.50x |") {
		t.Errorf("no python ratio row in:\n%s", got)
	}
	if strings.Contains(got, "javascript") || strings.Contains(got, "| bash |") {
		t.Errorf("rows without a match in both runs are listed:\n%s", got)
	}
}

func TestCompareRefusesWhatBenchDidNotWrite(t *testing.T) {
	dir := t.TempDir()
	notJSON := filepath.Join(dir, "notes.txt")
	_ = os.WriteFile(notJSON, []byte("p50 10"), 0o600)
	for name, path := range map[string]string{"missing file": filepath.Join(dir, "nope.json"), "not a report": notJSON} {
		t.Run(name, func(t *testing.T) {
			if _, err := loadReport(path); err == nil || !strings.Contains(err.Error(), "--compare") && !strings.Contains(err.Error(), "reading") {
				t.Errorf("got %v, want an error that says what is wrong", err)
			}
		})
	}
}
