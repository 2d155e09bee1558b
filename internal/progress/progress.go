// Package progress reports the progress of long cwm runs (tracing, agent
// episodes, grading) on a terminal or in a log.
//
// On a terminal a Bar redraws one line in place; anywhere else (a log file,
// CI output) it prints a plain line now and then, because carriage returns
// and a line per item make logs unreadable. Counting is cheap: Add and Count
// take a mutex and read the clock, and write only when it is time to draw,
// so they can be called once per item from many goroutines.
package progress

import (
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/term"
)

// ttyInterval is how often a terminal bar is redrawn: fast enough to look
// live, slow enough to cost nothing.
const ttyInterval = 200 * time.Millisecond

// Bar is a progress reporter. A nil *Bar does nothing, so callers can pass
// nil to run quietly.
type Bar struct {
	w     io.Writer
	label string
	total int // 0 when unknown
	// tty selects the redrawn bar; width is the terminal's columns (0 when
	// unknown), which the line must not exceed or \r stops working.
	tty   bool
	width int
	every time.Duration // interval between plain lines
	now   func() time.Time

	mu       sync.Mutex // guards the fields below
	count    int
	counters map[string]int
	start    time.Time
	lastDraw time.Time
	done     bool
}

// Option configures a Bar.
type Option func(*Bar)

// Every sets the interval between plain lines when the output is not a
// terminal (default 5s).
func Every(d time.Duration) Option {
	return func(b *Bar) { b.every = d }
}

// New returns a reporter writing to w: an updating one-line bar (with \r,
// counts, rate, ETA) when w is a terminal, otherwise a plain line at most
// every 5s (see Every) and at Done. total 0 means unknown. Write errors are
// ignored: progress is advisory and must never fail a run.
func New(w io.Writer, label string, total int, opts ...Option) *Bar {
	b := &Bar{w: w, label: label, total: max(total, 0), every: 5 * time.Second, now: time.Now}
	if isTerminal(w) {
		b.tty = true
		if cols, _, err := term.GetSize(int(w.(*os.File).Fd())); err == nil {
			b.width = cols
		}
	}
	for _, o := range opts {
		o(b)
	}
	b.start = b.now()
	b.lastDraw = b.start
	return b
}

// Add records n more items done.
func (b *Bar) Add(n int) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.count += n
	b.maybeDrawLocked()
}

// Count increments the counter named status, shown in the line as
// status=N (e.g. ok=10 exception=2) from the next line drawn. It does not
// count an item; call Add for that, so that one item can have several
// statuses or none.
func (b *Bar) Count(status string) {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.counters == nil {
		b.counters = make(map[string]int)
	}
	b.counters[status]++
	// No drawing here: a line is due only when items advance, so that
	// Count-then-Add per item never shows a status ahead of its item.
}

// Done prints the final line. Later calls, and later Adds, print nothing.
func (b *Bar) Done() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.done {
		return
	}
	b.done = true
	line := b.lineLocked(b.now(), true)
	if b.tty {
		io.WriteString(b.w, "\r"+line+"\x1b[K\n")
	} else {
		io.WriteString(b.w, line+"\n")
	}
}

func (b *Bar) maybeDrawLocked() {
	if b.done {
		return
	}
	interval := b.every
	if b.tty {
		interval = ttyInterval
	}
	now := b.now()
	if now.Sub(b.lastDraw) < interval {
		return
	}
	b.lastDraw = now
	line := b.lineLocked(now, false)
	if b.tty {
		// \x1b[K clears what is left of a longer previous line.
		io.WriteString(b.w, "\r"+line+"\x1b[K")
	} else {
		io.WriteString(b.w, line+"\n")
	}
}

// lineLocked renders the line at time now, e.g.
//
//	trace 120/1000 12% 35.2/s eta 25s exception=20 ok=100
//	trace 1000/1000 100% 35.7/s in 28s exception=31 ok=969
func (b *Bar) lineLocked(now time.Time, final bool) string {
	var s strings.Builder
	s.WriteString(b.label)
	elapsed := now.Sub(b.start)
	if b.total > 0 {
		if b.tty {
			s.WriteString(" " + bar(b.count, b.total, 20))
		}
		fmt.Fprintf(&s, " %d/%d %d%%", b.count, b.total, b.count*100/b.total)
	} else {
		fmt.Fprintf(&s, " %d", b.count)
	}
	rate := 0.0
	if elapsed > 0 {
		rate = float64(b.count) / elapsed.Seconds()
		s.WriteString(" " + formatRate(rate) + "/s")
	}
	switch {
	case final:
		s.WriteString(" in " + formatDuration(elapsed))
	case b.total > b.count && rate > 0:
		eta := time.Duration(float64(b.total-b.count) / rate * float64(time.Second))
		s.WriteString(" eta " + formatDuration(eta))
	}
	names := make([]string, 0, len(b.counters))
	for name := range b.counters {
		names = append(names, name)
	}
	// Sorted, so that the line does not reshuffle as statuses appear.
	sort.Strings(names)
	for _, name := range names {
		fmt.Fprintf(&s, " %s=%d", name, b.counters[name])
	}
	line := s.String()
	if b.tty && b.width > 1 {
		if r := []rune(line); len(r) >= b.width {
			line = string(r[:b.width-1])
		}
	}
	return line
}

// bar draws [=====>    ] with width cells inside the brackets.
func bar(count, total, width int) string {
	filled := min(count*width/total, width)
	head := ""
	if filled < width && filled > 0 {
		filled--
		head = ">"
	}
	return "[" + strings.Repeat("=", filled) + head + strings.Repeat(" ", width-filled-len(head)) + "]"
}

func formatRate(r float64) string {
	if r < 100 {
		return fmt.Sprintf("%.1f", r)
	}
	return fmt.Sprintf("%.0f", r)
}

func formatDuration(d time.Duration) string {
	return d.Round(time.Second).String()
}
