package engine

import (
	"testing"
	"time"
)

func TestOutputStoreEvictsOldestAndExpired(t *testing.T) {
	now := time.Unix(1000, 0)
	s := NewOutputStore(10, time.Minute)
	s.now = func() time.Time { return now }
	s.Put("a", []byte("aaaa"))
	s.Put("b", []byte("bbbb"))
	s.Put("c", []byte("cccc")) // 12 bytes > 10: a goes
	if _, ok := s.Get("a"); ok {
		t.Error("oldest output kept past the size cap")
	}
	if got, ok := s.Get("c"); !ok || string(got) != "cccc" {
		t.Errorf("c = %q, %v", got, ok)
	}
	now = now.Add(2 * time.Minute)
	if _, ok := s.Get("b"); ok {
		t.Error("output kept past its retention")
	}
	if n := len(s.List()); n != 0 {
		t.Errorf("%d outputs left after expiry", n)
	}
	s.Put("big", make([]byte, 50)) // bigger than the store: kept cut to size
	if got, _ := s.Get("big"); len(got) != 10 {
		t.Errorf("big output kept at %d bytes", len(got))
	}
}
