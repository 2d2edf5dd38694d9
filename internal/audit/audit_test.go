package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestWriteAppendsOneJSONLinePerEntry(t *testing.T) {
	var buf bytes.Buffer
	l := New(&buf)
	code := 3
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			_ = l.Write(Entry{Time: time.Unix(0, 0).UTC(), Principal: "alice", Tool: "run_code", Language: "python",
				CodeSHA256: strings.Repeat("a", 64), RunID: "r1", SandboxID: "c1", Status: "error", ExitCode: &code, DurationMs: 12})
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, line := range lines {
		var got map[string]any
		if err := json.Unmarshal([]byte(line), &got); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		if got["principal"] != "alice" || got["exit_code"] != 3.0 || got["code_sha256"] != strings.Repeat("a", 64) {
			t.Fatalf("line %q", line)
		}
		if _, ok := got["session_id"]; ok {
			t.Fatalf("empty fields are left out: %q", line)
		}
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name    string
		path    string
		wantErr string
	}{
		{"creates a file readable by its owner only", filepath.Join(dir, "audit.log"), ""},
		{"appends to an existing file", filepath.Join(dir, "audit.log"), ""},
		{"refuses a path in a missing directory, saying what to do", filepath.Join(dir, "missing", "audit.log"), "cannot be opened for writing"},
		{"refuses a directory", dir, "--audit-log"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l, err := Open(tt.path)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Open(%s): %v, want an error with %q", tt.path, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := l.Write(Entry{Tool: "run_code"}); err != nil {
				t.Fatal(err)
			}
			if err := l.Close(); err != nil {
				t.Fatal(err)
			}
			fi, err := os.Stat(tt.path)
			if err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("stat: %v %v", fi.Mode(), err)
			}
		})
	}
	data, _ := os.ReadFile(filepath.Join(dir, "audit.log"))
	if n := strings.Count(string(data), "\n"); n != 2 {
		t.Fatalf("%d lines after two opens, want 2 (appended)", n)
	}
}

// TestTailKeepsTheLatestLinesNewestFirst: the console's view of the log is
// the latest TailSize lines, newest first, whatever was written before.
func TestTailKeepsTheLatestLinesNewestFirst(t *testing.T) {
	l := New(io.Discard)
	if got := l.Tail(5); len(got) != 0 {
		t.Fatalf("an empty log's tail: %v", got)
	}
	for i := range TailSize + 7 {
		if err := l.Write(Entry{Principal: fmt.Sprint(i)}); err != nil {
			t.Fatal(err)
		}
	}
	got := l.Tail(3)
	if len(got) != 3 || got[0].Principal != fmt.Sprint(TailSize+6) || got[2].Principal != fmt.Sprint(TailSize+4) {
		t.Errorf("tail(3) = %v", got)
	}
	if all := l.Tail(10 * TailSize); len(all) != TailSize || all[TailSize-1].Principal != "7" {
		t.Errorf("tail of everything: %d lines, oldest %q", len(all), all[len(all)-1].Principal)
	}
	var none *Log
	if none.Tail(3) != nil {
		t.Error("a nil log has a tail")
	}
}
