package envbuild

import (
	"fmt"
	"os"
	"sync"
)

// maxBuildLog bounds build.log. An install step may print hundreds of MiB
// (a compiler's warnings, a test suite's output); what tells why a build
// went wrong is at its start (the recipe, the first errors) and its end
// (the last step's failure), so the log keeps the first and the last
// halves of this and says what it cut between them.
const maxBuildLog = 16 << 20

// cappedLog is a build log of at most maxBuildLog bytes (and a line saying
// what was cut): the head goes to the file as it comes, the tail is held
// in a ring of half the cap, allocated once the head is full, and written
// at Close.
type cappedLog struct {
	mu     sync.Mutex // the steps' output may come from several goroutines
	f      *os.File
	head   int64  // bytes written to f
	ring   []byte // the tail, once the head is full
	pos    int    // where the next tail byte goes in ring
	filled bool   // ring has wrapped
	cut    int64  // bytes dropped between the head and the tail
	closed bool
}

func newCappedLog(f *os.File) *cappedLog { return &cappedLog{f: f} }

func (l *cappedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := len(p)
	const half = maxBuildLog / 2
	if l.head < half {
		k := min(int64(len(p)), half-l.head)
		if _, err := l.f.Write(p[:k]); err != nil {
			return 0, err
		}
		l.head += k
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if l.ring == nil {
		l.ring = make([]byte, half)
	}
	if len(p) > len(l.ring) { // only its end can stay
		drop := len(p) - len(l.ring)
		l.cut += int64(drop)
		p = p[drop:]
	}
	for len(p) > 0 {
		k := copy(l.ring[l.pos:], p)
		if l.filled {
			l.cut += int64(k) // the oldest bytes of the tail, overwritten
		}
		p = p[k:]
		l.pos += k
		if l.pos == len(l.ring) {
			l.pos, l.filled = 0, true
		}
	}
	return n, nil
}

// Close writes the line saying what was cut and the tail, and closes the
// file. It may be called again.
func (l *cappedLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	var err error
	if l.cut > 0 {
		_, err = fmt.Fprintf(l.f, "\n[cwm: %d bytes of the build log cut here; it keeps its first and last %d MiB]\n", l.cut, maxBuildLog>>21)
	}
	if err == nil && l.filled {
		_, err = l.f.Write(l.ring[l.pos:])
	}
	if err == nil && l.ring != nil {
		_, err = l.f.Write(l.ring[:l.pos])
	}
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}
