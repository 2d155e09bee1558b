package progress

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a manual clock; tests move it with advance.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }
func withClock(c *clock) Option          { return func(b *Bar) { b.now = c.now } }
func asTerminal(width int) Option        { return func(b *Bar) { b.tty, b.width = true, width } }
func newTestBar(total int, opts ...Option) (*Bar, *bytes.Buffer, *clock) {
	var buf bytes.Buffer
	c := &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	return New(&buf, "trace", total, append([]Option{withClock(c)}, opts...)...), &buf, c
}

// step is one call on a Bar: advance the clock, then add n items and
// count the statuses, or finish.
type step struct {
	after  time.Duration
	add    int
	counts []string
	done   bool
}

func run(b *Bar, c *clock, steps []step) {
	for _, s := range steps {
		c.advance(s.after)
		for _, st := range s.counts {
			b.Count(st)
		}
		if s.add != 0 {
			b.Add(s.add)
		}
		if s.done {
			b.Done()
		}
	}
}

func TestPlainLines(t *testing.T) {
	tests := []struct {
		name  string
		total int
		opts  []Option
		steps []step
		want  string
	}{
		{
			name:  "quiet until interval, final line",
			total: 100,
			steps: []step{
				{after: time.Second, add: 10},
				{after: 4 * time.Second, add: 10, counts: []string{"ok", "ok", "exception"}},
				{after: time.Second, add: 80},
				{after: 4 * time.Second, done: true},
			},
			want: "trace 20/100 20% 4.0/s eta 20s exception=1 ok=2\n" +
				"trace 100/100 100% 10.0/s in 10s exception=1 ok=2\n",
		},
		{
			name:  "unknown total has no eta",
			total: 0,
			steps: []step{
				{after: 5 * time.Second, add: 1000},
				{after: 4 * time.Second, add: 500},
				{after: time.Second, done: true},
			},
			want: "trace 1000 200/s\ntrace 1500 150/s in 10s\n",
		},
		{
			name:  "custom interval",
			total: 4,
			opts:  []Option{Every(time.Second)},
			steps: []step{
				{after: time.Second, add: 1},
				{after: 500 * time.Millisecond, add: 1},
				{after: 500 * time.Millisecond, add: 1},
				{after: 0, add: 1, done: true},
			},
			want: "trace 1/4 25% 1.0/s eta 3s\ntrace 3/4 75% 1.5/s eta 1s\ntrace 4/4 100% 2.0/s in 2s\n",
		},
		{
			name:  "done at once has no rate",
			total: 3,
			steps: []step{{done: true}},
			want:  "trace 0/3 0% in 0s\n",
		},
		{
			name:  "done twice and adds after done print once",
			total: 2,
			steps: []step{
				{after: 2 * time.Second, add: 2, done: true},
				{after: 10 * time.Second, add: 1, done: true},
			},
			want: "trace 2/2 100% 1.0/s in 2s\n",
		},
		{
			name:  "many adds at one instant write nothing",
			total: 1000,
			steps: func() []step {
				s := make([]step, 1000)
				for i := range s {
					s[i] = step{add: 1}
				}
				return s
			}(),
			want: "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, buf, c := newTestBar(tt.total, tt.opts...)
			run(b, c, tt.steps)
			if got := buf.String(); got != tt.want {
				t.Errorf("output = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestTerminal(t *testing.T) {
	b, buf, c := newTestBar(10, asTerminal(80))
	run(b, c, []step{
		{after: 100 * time.Millisecond, add: 1}, // too soon to redraw
		{after: 100 * time.Millisecond, add: 1},
		{after: 800 * time.Millisecond, add: 3, counts: []string{"ok"}},
		{after: time.Second, add: 5, done: true},
	})
	want := "\rtrace [===>                ] 2/10 20% 10.0/s eta 1s\x1b[K" +
		"\rtrace [=========>          ] 5/10 50% 5.0/s eta 1s ok=1\x1b[K" +
		"\rtrace [====================] 10/10 100% 5.0/s ok=1\x1b[K" +
		"\rtrace [====================] 10/10 100% 5.0/s in 2s ok=1\x1b[K\n"
	if got := buf.String(); got != want {
		t.Errorf("terminal output = %q, want %q", got, want)
	}
}

func TestTerminalWidth(t *testing.T) {
	b, buf, c := newTestBar(0, asTerminal(12))
	c.advance(time.Second)
	b.Add(7)
	if got, want := buf.String(), "\rtrace 7 7.0\x1b[K"; got != want {
		t.Errorf("narrow terminal output = %q, want %q", got, want)
	}
}

func TestNilBar(t *testing.T) {
	var b *Bar
	b.Add(1)
	b.Count("ok")
	b.Done() // must not panic
}

func TestNotATerminal(t *testing.T) {
	var buf bytes.Buffer
	if b := New(&buf, "x", 1); b.tty {
		t.Error("New(bytes.Buffer).tty = true, want false")
	}
}

func TestConcurrent(t *testing.T) {
	b, buf, c := newTestBar(8000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for i := range 1000 {
				b.Add(1)
				if i%4 == 0 {
					b.Count("exception")
				} else {
					b.Count("ok")
				}
			}
		})
	}
	wg.Wait()
	c.advance(4 * time.Second)
	b.Done()
	want := "trace 8000/8000 100% 2000/s in 4s exception=2000 ok=6000\n"
	if got := buf.String(); !strings.HasSuffix(got, want) {
		t.Errorf("final line = %q, want %q", got, want)
	}
}

func TestBar(t *testing.T) {
	tests := []struct {
		count, total int
		want         string
	}{
		{0, 10, "[          ]"},
		{1, 10, "[>         ]"},
		{5, 10, "[====>     ]"},
		{10, 10, "[==========]"},
		{15, 10, "[==========]"},
	}
	for _, tt := range tests {
		if got := bar(tt.count, tt.total, 10); got != tt.want {
			t.Errorf("bar(%d, %d, 10) = %q, want %q", tt.count, tt.total, got, tt.want)
		}
	}
}

// syncBuffer is a bytes.Buffer a Heartbeat's goroutine and the test can
// share.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestHeartbeat waits, bounded by a condition, for a heartbeat's lines
// and checks that none comes after stop.
func TestHeartbeat(t *testing.T) {
	var w syncBuffer
	stop := Heartbeat(&w, "baseline run 1/3", time.Millisecond)
	if got := w.String(); got != "baseline run 1/3: started\n" {
		t.Fatalf("first line %q, want the start said at once", got)
	}
	deadline := time.Now().Add(time.Minute)
	for strings.Count(w.String(), "baseline run 1/3: running for ") < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("no two heartbeat lines in a minute: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	after := w.String()
	stop() // twice is harmless
	time.Sleep(5 * time.Millisecond)
	if w.String() != after {
		t.Errorf("lines after stop: %q", strings.TrimPrefix(w.String(), after))
	}
	Heartbeat(nil, "x", time.Millisecond)() // nil writer: nothing, no goroutine left
}

// TestWaiting: no line at the start, then Heartbeat's lines.
func TestWaiting(t *testing.T) {
	var w syncBuffer
	stop := Waiting(&w, "install step 2/3 (pip install -e .)", time.Millisecond)
	deadline := time.Now().Add(time.Minute)
	for !strings.Contains(w.String(), "install step 2/3 (pip install -e .): running for ") {
		if time.Now().After(deadline) {
			t.Fatalf("no line in a minute: %q", w.String())
		}
		time.Sleep(time.Millisecond)
	}
	stop()
	if strings.Contains(w.String(), "started") {
		t.Errorf("Waiting said the start: %q", w.String())
	}
}
