package tracer

import "strings"

// An episode's context holds the def blocks its frames run in, not whole
// modules (ContextDefs): a web framework's module is tens of kilobytes,
// repeated in every episode of every function in it, while the functions
// an episode runs are a few hundred lines at most. Finding a block's end
// needs Python's logical lines (a docstring or a bracketed signature may
// sit left of the body), which this scanner gives without a parser: it
// knows strings, comments, brackets and backslash continuations, which is
// all that decides where a logical line ends.

// logicalStarts returns, for each line (lines[0] is line 1), the line
// number at which its logical line starts.
func logicalStarts(lines []string) []int {
	starts := make([]int, len(lines))
	depth, cont := 0, false
	var quote string // the open string's quote, "" outside strings
	for i, line := range lines {
		if depth > 0 || cont || len(quote) == 3 {
			starts[i] = starts[i-1]
		} else {
			starts[i] = i + 1
		}
		cont = false
		for j := 0; j < len(line); j++ {
			c := line[j]
			switch {
			case quote != "":
				if c == '\\' {
					j++ // an escaped character, even a quote, ends nothing
				} else if strings.HasPrefix(line[j:], quote) {
					j += len(quote) - 1
					quote = ""
				}
			case c == '#':
				j = len(line)
			case c == '"' || c == '\'':
				quote = string(c)
				if strings.HasPrefix(line[j:], strings.Repeat(quote, 3)) {
					quote = strings.Repeat(quote, 3)
					j += 2
				}
			case c == '(' || c == '[' || c == '{':
				depth++
			case c == ')' || c == ']' || c == '}':
				depth = max(depth-1, 0)
			case c == '\\' && j == len(line)-1:
				cont = true
			}
		}
		if len(quote) == 1 {
			// A one-quote string ends with its line unless a backslash
			// continues it, which the scan above took as an escape.
			cont = strings.HasSuffix(line, "\\")
			if !cont {
				quote = ""
			}
		}
	}
	return starts
}

// indentOf is the width of line's leading white space, a tab counting to
// the next multiple of 8 as in Python's tokenizer.
func indentOf(line string) int {
	w := 0
	for _, c := range line {
		switch c {
		case ' ':
			w++
		case '\t':
			w = w/8*8 + 8
		case '\f':
			w = 0
		default:
			return w
		}
	}
	return w
}

// isCode reports whether line has a statement on it, not only space or a
// comment.
func isCode(line string) bool {
	s := strings.TrimLeft(line, " \t\f")
	return s != "" && s[0] != '#'
}

// logicalLines returns f's logical line starts, computed once.
func (f *sourceFile) logicalLines() []int {
	if f.starts == nil {
		f.starts = logicalStarts(f.lines)
	}
	return f.starts
}

// logicalEnd returns the last line of the logical line that starts at ln.
func (f *sourceFile) logicalEnd(ln int) int {
	starts := f.logicalLines()
	for ln < len(starts) && starts[ln] == starts[ln-1] {
		ln++
	}
	return ln
}

// blockEnd returns the last line of the block whose header is the logical
// line starting at ln (a def or class line): the lines after it that are
// indented deeper, or continue a logical line that is; trailing blank and
// comment lines are not part of it.
func (f *sourceFile) blockEnd(ln int) int {
	starts := f.logicalLines()
	indent := indentOf(f.lines[ln-1])
	end := f.logicalEnd(ln)
	for j := end + 1; j <= len(f.lines); j++ {
		line := f.lines[j-1]
		if starts[j-1] != j {
			end = j // inside a logical line of the block: a docstring, a bracket
			continue
		}
		if !isCode(line) {
			continue
		}
		if indentOf(line) <= indent {
			break
		}
		end = j
	}
	return end
}

// selectLogical marks the logical line that holds line ln, and the headers
// of the blocks around it (class, def, if, with ...): what makes an
// indented line read as Python in a context that leaves the rest out.
func (f *sourceFile) selectLogical(sel []bool, ln int) {
	starts := f.logicalLines()
	first := starts[ln-1]
	for j := first; j <= f.logicalEnd(first); j++ {
		sel[j-1] = true
	}
	f.selectHeaders(sel, first)
}

// selectRange marks lines from to to and the headers around from.
func (f *sourceFile) selectRange(sel []bool, from, to int) {
	for j := from; j <= to; j++ {
		sel[j-1] = true
	}
	f.selectHeaders(sel, from)
}

// selectHeaders marks, for the line ln, the header of each block it is
// in: going up, the first logical line that starts with less indentation,
// then the one around that, to the module's level.
func (f *sourceFile) selectHeaders(sel []bool, ln int) {
	starts := f.logicalLines()
	indent := indentOf(f.lines[ln-1])
	for j := ln - 1; j >= 1 && indent > 0; j-- {
		if starts[j-1] != j || !isCode(f.lines[j-1]) || indentOf(f.lines[j-1]) >= indent {
			continue
		}
		if strings.HasPrefix(strings.TrimLeft(f.lines[j-1], " \t"), "@") {
			continue // a decorator of the block ln is in, not a header of it
		}
		indent = indentOf(f.lines[j-1])
		for k := j; k <= f.logicalEnd(j); k++ {
			sel[k-1] = true
		}
	}
}
