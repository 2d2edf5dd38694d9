package wire

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	in := []Frame{{Kind: KindStdout, Stage: 1, Payload: []byte("hi")}, {Kind: KindDone, Payload: []byte("{}")}, {Kind: KindStderr}}
	for _, f := range in {
		if err := WriteFrame(&buf, f); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range in {
		got, err := ReadFrame(&buf)
		if err != nil {
			t.Fatalf("frame %d: %v", i, err)
		}
		if got.Kind != want.Kind || got.Stage != want.Stage || !bytes.Equal(got.Payload, want.Payload) {
			t.Errorf("frame %d = %+v, want %+v", i, got, want)
		}
	}
	if _, err := ReadFrame(&buf); err != io.EOF {
		t.Errorf("after the last frame: %v, want EOF", err)
	}
}

func TestReadFrameRejects(t *testing.T) {
	cases := []struct {
		name string
		data []byte
		want error
	}{
		{"unknown kind", []byte{'Z', 0, 0, 0, 0, 0}, ErrBadFrame},
		{"oversized", []byte{'O', 0, 0xff, 0xff, 0xff, 0xff}, ErrBadFrame},
		{"cut header", []byte{'O', 0, 0}, io.ErrUnexpectedEOF},
		{"cut payload", []byte{'O', 0, 0, 0, 0, 5, 'a'}, io.ErrUnexpectedEOF},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := ReadFrame(bytes.NewReader(c.data)); !errors.Is(err, c.want) {
				t.Errorf("got %v, want %v", err, c.want)
			}
		})
	}
}

func TestValidPath(t *testing.T) {
	good := []string{"a", "a.txt", "dir/sub/file.py", ".hidden", "a..b", "..a"}
	bad := []string{"", "/abs", "..", "../x", "a/../b", "a/./b", "a//b", "a/", "./a", ".", "a\x00b", strings.Repeat("a", 5000)}
	for _, p := range good {
		if err := ValidPath(p); err != nil {
			t.Errorf("ValidPath(%q) = %v, want ok", p, err)
		}
	}
	for _, p := range bad {
		if err := ValidPath(p); err == nil {
			t.Errorf("ValidPath(%q) accepted", p)
		}
	}
}

func TestSandboxUserIsTheUIDAndGID(t *testing.T) {
	if want := fmt.Sprintf("%d:%d", SandboxUID, SandboxGID); SandboxUser != want {
		t.Errorf("SandboxUser = %q, want %q", SandboxUser, want)
	}
}
