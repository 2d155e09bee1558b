package envbuild

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// phases times the parts of a build for the last line of build.log
// ("phases: source=0.31 tools=0.02 ..."), so that where a build's time
// goes (a rebuild from the lock, above all) can be read from any stored
// environment and summed by scripts/envbench.sh, not guessed.
type phases struct {
	last  time.Time
	names []string
	secs  []float64
}

func newPhases() *phases { return &phases{last: time.Now()} }

// done ends the phase called name: the time since the previous one ended.
// A name given again adds to its phase.
func (p *phases) done(name string) {
	now := time.Now()
	d := roundSeconds(now.Sub(p.last))
	p.last = now
	for i, n := range p.names {
		if n == name {
			p.secs[i] += d
			return
		}
	}
	p.names, p.secs = append(p.names, name), append(p.secs, d)
}

// write puts the phases on one line of w.
func (p *phases) write(w io.Writer) {
	parts := make([]string, len(p.names))
	for i, n := range p.names {
		parts[i] = fmt.Sprintf("%s=%.2f", n, p.secs[i])
	}
	fmt.Fprintf(w, "\nphases: %s\n", strings.Join(parts, " "))
}
