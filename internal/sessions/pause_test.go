package sessions

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-code-runner/mcp-code-runner/internal/wire"
)

// TestAPauseArchiveIsReadBackOnlyByItsOwnSession covers the checks of a
// paused session's archive: its checksum, then whose it says it is.
func TestAPauseArchiveIsReadBackOnlyByItsOwnSession(t *testing.T) {
	files := []wire.File{{Path: "notes.txt", Data: []byte("kept")}, {Path: "data/x.bin", Data: []byte{0, 1, 2}}}
	write := func(t *testing.T, id, owner string) (string, string) {
		t.Helper()
		path := filepath.Join(t.TempDir(), "paused", id+".tar")
		sum, err := writeArchive(path, id, owner, files)
		if err != nil {
			t.Fatal(err)
		}
		return path, sum
	}
	cases := []struct {
		name string
		// change returns the session and owner that read the archive
		// written for sess-a of alice, after changing what it likes.
		change func(t *testing.T, path, sum string) (id, owner, readSum string)
		want   string
	}{
		{"its own session reads it back", func(_ *testing.T, _, sum string) (string, string, string) {
			return "sess-a", "alice", sum
		}, ""},
		{"a flipped byte is refused", func(t *testing.T, path, sum string) (string, string, string) {
			data, _ := os.ReadFile(path)
			data[len(data)/2] ^= 0x01
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return "sess-a", "alice", sum
		}, "corrupted or not its own"},
		{"a truncated archive is refused", func(t *testing.T, path, sum string) (string, string, string) {
			if err := os.Truncate(path, 512); err != nil {
				t.Fatal(err)
			}
			return "sess-a", "alice", sum
		}, "corrupted or not its own"},
		{"another session's archive under its record's checksum is refused", func(_ *testing.T, _, sum string) (string, string, string) {
			return "sess-b", "alice", sum
		}, "archive of another session (sess-a)"},
		{"another principal's archive under its record's checksum is refused", func(_ *testing.T, _, sum string) (string, string, string) {
			return "sess-a", "bob", sum
		}, "another principal's session"},
		{"a missing archive is refused", func(t *testing.T, path, sum string) (string, string, string) {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
			return "sess-a", "alice", sum
		}, "its kept files are gone"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path, sum := write(t, "sess-a", "alice")
			if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
				t.Fatalf("the archive: %v, %v; want mode 0600", fi, err)
			}
			id, owner, readSum := c.change(t, path, sum)
			got, err := readArchive(path, id, owner, readSum)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("reading back: %v", err)
			case c.want == "" && (len(got) != 2 || string(got[0].Data) != "kept" || got[1].Path != "data/x.bin"):
				t.Fatalf("read back %+v", got)
			case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
				t.Fatalf("got %v, want an error saying %q", err, c.want)
			}
		})
	}
}
