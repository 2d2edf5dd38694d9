package store

import (
	"bytes"
	"errors"
	"testing"
)

func TestBlobsReadBackWholeAndByRangeAcrossChunks(t *testing.T) {
	ctx := t.Context()
	s := NewMemory()
	data := make([]byte, 2*ChunkSize+10)
	for i := range data {
		data[i] = byte(i * 7)
	}
	if err := PutBlob(ctx, s, "b", data, 0); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		from, to int
	}{
		{"the whole blob", 0, len(data)},
		{"within one chunk", 10, 20},
		{"across a chunk boundary", ChunkSize - 5, ChunkSize + 5},
		{"the last chunk's tail", 2*ChunkSize + 3, len(data)},
		{"nothing", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := GetBlobRange(ctx, s, "b", tc.from, tc.to)
			if err != nil || !bytes.Equal(got, data[tc.from:tc.to]) {
				t.Errorf("GetBlobRange(%d, %d) = %d bytes, %v", tc.from, tc.to, len(got), err)
			}
		})
	}
	if _, err := GetBlob(ctx, s, "b", len(data)+1); !errors.Is(err, ErrNotFound) {
		t.Errorf("a blob read past what was stored: %v, want ErrNotFound", err)
	}
	if err := DeleteBlob(ctx, s, "b", len(data)); err != nil {
		t.Fatal(err)
	}
	if left, _ := s.List(ctx, "b/"); len(left) != 0 {
		t.Errorf("%d chunks left after DeleteBlob", len(left))
	}
}
