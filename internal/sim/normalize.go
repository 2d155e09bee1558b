package sim

import (
	"strings"

	"cwm/internal/lazyre"
	"cwm/internal/trajectory"
)

// What Normalize rewrites: durations, memory addresses, temporary paths,
// and the rules pytest draws to the terminal's width.
var (
	durationRe = lazyre.New(`\b\d+(?:\.\d+)?\s?(?:s|ms|us|µs|sec|secs|seconds|minutes|min)\b`)
	addressRe  = lazyre.New(`0x[0-9a-fA-F]{4,}`)
	tmpPathRe  = lazyre.New(`/tmp/[^\s'":,)\]]*`)
	ruleRe     = lazyre.New(`={2,}|_{2,}|-{2,}|\*{2,}`)
	spaceRe    = lazyre.New(`[ \t]+`)
)

// Normalize is the output two runs of one command share when neither is
// wrong: durations become <T>, addresses 0x<ADDR>, paths under /tmp
// /tmp/<TMP>, runs of two or more = _ - * become two, runs of
// spaces and tabs one space, and each line is trimmed, blank lines
// dropped.
func Normalize(s string) string {
	s = durationRe().ReplaceAllString(s, "<T>")
	s = addressRe().ReplaceAllString(s, "0x<ADDR>")
	s = tmpPathRe().ReplaceAllString(s, "/tmp/<TMP>")
	s = ruleRe().ReplaceAllStringFunc(s, func(r string) string { return r[:2] })
	var out []string
	for _, l := range strings.Split(s, "\n") {
		l = strings.TrimSpace(spaceRe().ReplaceAllString(l, " "))
		if l != "" {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// Diverged reports whether a prediction and a real run disagree: their
// exit codes differ, or their observed texts do after Normalize.
func Diverged(pred, real *trajectory.Execution) bool {
	return pred.ExitCode != real.ExitCode || Normalize(ObservedText(pred)) != Normalize(ObservedText(real))
}
