package wire

import (
	"bytes"
	"testing"
)

func FuzzReadFrame(f *testing.F) {
	f.Add([]byte{'O', 0, 0, 0, 0, 2, 'h', 'i'})
	f.Add([]byte{'Q', 0, 0, 0, 0, 2, '{', '}'})
	f.Add([]byte{'Z', 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, data []byte) {
		r := bytes.NewReader(data)
		for {
			fr, err := ReadFrame(r)
			if err != nil {
				return
			}
			var buf bytes.Buffer
			if err := WriteFrame(&buf, fr); err != nil {
				t.Fatalf("re-encoding a frame that decoded: %v", err)
			}
		}
	})
}

func FuzzValidPath(f *testing.F) {
	for _, s := range []string{"a", "a/b", "../x", "/x", "a//b", ".", "a/./b", "x\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, p string) {
		if ValidPath(p) != nil {
			return
		}
		// Whatever passes stays inside the workspace.
		if p[0] == '/' || p == ".." || bytes.HasPrefix([]byte(p), []byte("../")) || bytes.Contains([]byte("/"+p+"/"), []byte("/../")) {
			t.Fatalf("ValidPath accepted %q", p)
		}
	})
}
