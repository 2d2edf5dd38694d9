package audit

// TailSize is how many of its latest lines a Log keeps in memory, for the
// operator console's view of the log.
const TailSize = 200

// ring keeps the latest TailSize entries.
type ring struct {
	buf  []Entry
	next int
}

func (r *ring) add(e Entry) {
	if len(r.buf) < TailSize {
		r.buf = append(r.buf, e)
		return
	}
	r.buf[r.next] = e
	r.next = (r.next + 1) % TailSize
}

// Tail returns up to n of the latest lines written, newest first. A nil
// Log has none.
func (l *Log) Tail(n int) []Entry {
	if l == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	size := len(l.tail.buf)
	n = min(n, size)
	out := make([]Entry, 0, n)
	for i := range n {
		// The newest is just before next (or last, until the ring is full).
		idx := (l.tail.next - 1 - i + 2*size) % size
		out = append(out, l.tail.buf[idx])
	}
	return out
}
