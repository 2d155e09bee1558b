package tracer

import (
	"strconv"
	"strings"

	"cwm/internal/trace"
)

// PlainText writes a repository trace (an episode's context, codes and
// frames) as plain text, executed lines with their values as SWE-rebench
// V2 publishes its test traces (its exact layout is not cwm's): one
// line per event, "FILE:LINE EVENT SOURCE", the source line as written
// (its indentation kept), then after " | " the values: a call's
// arguments, the locals a line changed (the frame's values that are not
// ".."), "=> VALUE" for a return, "!! EXCEPTION" for an exception. FILE
// is relative to the repository and LINE the file's own line number; the
// entry marker is left out of the source, and a newline in a value (a
// __repr__ of the program's may write one) is written "\n", so that an
// event is always one line.
func PlainText(context string, codes []Code, frames []Frame) string {
	offsets := map[string]int{} // file -> the context line of its "# file:" header
	for i, line := range strings.Split(context, "\n") {
		if f, ok := strings.CutPrefix(line, "# file: "); ok {
			offsets[f] = i + 1
		}
	}
	var b strings.Builder
	for _, f := range frames {
		file := ""
		if f.Code >= 0 && f.Code < len(codes) {
			file = codes[f.Code].File
		}
		b.WriteString(file + ":" + strconv.Itoa(f.Lineno-offsets[file]) + " " + f.Event.String() + " ")
		b.WriteString(strings.TrimSuffix(f.Source, " "+trace.EntryMarker))
		switch f.Event {
		case trace.Return:
			b.WriteString(" | => " + oneLine(f.Arg))
		case trace.Exception:
			b.WriteString(" | !! " + oneLine(exceptionValue(f.Arg)))
		default:
			var parts []string
			for _, l := range f.Locals {
				if l.Value != trace.Unchanged {
					parts = append(parts, l.Name+"="+oneLine(l.Value))
				}
			}
			if len(parts) > 0 {
				b.WriteString(" | " + strings.Join(parts, ", "))
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func oneLine(s string) string { return strings.ReplaceAll(s, "\n", `\n`) }
