package store

import (
	"context"
	"fmt"
	"time"
)

// ChunkSize is the most bytes one value of a blob holds. etcd refuses
// values above about 1.5 MiB (its request limit), so a large value (a full
// output, an artifact) is kept as numbered chunks of at most this size.
const ChunkSize = 512 << 10

// ChunkKey is the key of chunk i of the blob under prefix. The number is
// zero-padded, so that List returns the chunks in order.
func ChunkKey(prefix string, i int) string { return fmt.Sprintf("%s/%06d", prefix, i) }

// Chunks returns how many chunks a blob of size bytes has.
func Chunks(size int) int { return (size + ChunkSize - 1) / ChunkSize }

// PutBlob stores data under prefix as Chunks(len(data)) chunks, each with
// ttl. The caller records the size (in a record written after the blob, so
// that a reader never sees a size whose chunks are not all there yet).
func PutBlob(ctx context.Context, s Store, prefix string, data []byte, ttl time.Duration) error {
	for i := 0; i*ChunkSize < len(data); i++ {
		chunk := data[i*ChunkSize : min(len(data), (i+1)*ChunkSize)]
		if err := s.Put(ctx, ChunkKey(prefix, i), chunk, ttl); err != nil {
			return err
		}
	}
	return nil
}

// GetBlob reads the size bytes stored under prefix by PutBlob; a missing
// chunk is ErrNotFound (the blob expired or was deleted meanwhile).
func GetBlob(ctx context.Context, s Store, prefix string, size int) ([]byte, error) {
	return GetBlobRange(ctx, s, prefix, 0, size)
}

// GetBlobRange reads bytes [from, to) of a blob stored under prefix,
// getting only the chunks that hold them.
func GetBlobRange(ctx context.Context, s Store, prefix string, from, to int) ([]byte, error) {
	if from >= to {
		return []byte{}, nil
	}
	out := make([]byte, 0, to-from)
	for i := from / ChunkSize; i*ChunkSize < to; i++ {
		chunk, err := s.Get(ctx, ChunkKey(prefix, i))
		if err != nil {
			return nil, err
		}
		start := max(from-i*ChunkSize, 0)
		end := min(to-i*ChunkSize, len(chunk))
		if start > end || end < min(to-i*ChunkSize, ChunkSize) {
			return nil, fmt.Errorf("%w: chunk %d of %s holds %d bytes, fewer than its blob's size says", ErrNotFound, i, prefix, len(chunk))
		}
		out = append(out, chunk[start:end]...)
	}
	return out, nil
}

// DeleteBlob removes the chunks of a blob of size bytes under prefix.
func DeleteBlob(ctx context.Context, s Store, prefix string, size int) error {
	for i := range Chunks(size) {
		if err := s.Delete(ctx, ChunkKey(prefix, i)); err != nil {
			return err
		}
	}
	return nil
}
