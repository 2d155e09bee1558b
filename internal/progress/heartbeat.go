package progress

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// HeartbeatEvery is the interval of Heartbeat's lines: a log that stays
// silent longer than this looks like a hung run.
const HeartbeatEvery = 10 * time.Second

// Heartbeat reports one long step (a test run of several minutes) on w
// when w is not a terminal: a line when it starts and one every interval
// until stop, which returns once no more lines can come. A Bar draws only
// when items advance, so a step that is one item would say nothing until
// it ends. On a terminal, or with w nil, it does nothing.
func Heartbeat(w io.Writer, label string, every time.Duration) (stop func()) {
	return beat(w, label, every, true)
}

// Waiting reports a step that is usually short but may take minutes (an
// install that compiles a C extension) as Heartbeat does, without the
// line at its start: nothing unless it outlasts every.
func Waiting(w io.Writer, label string, every time.Duration) (stop func()) {
	return beat(w, label, every, false)
}

func beat(w io.Writer, label string, every time.Duration, started bool) (stop func()) {
	if w == nil || isTerminal(w) {
		return func() {}
	}
	start := time.Now()
	if started {
		fmt.Fprintf(w, "%s: started\n", label)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case now := <-t.C:
				fmt.Fprintf(w, "%s: running for %s\n", label, formatDuration(now.Sub(start)))
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(quit) })
		<-done
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
