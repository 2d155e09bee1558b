package testrun

import (
	"fmt"
	"strings"
)

// splitWords splits a shell command line into words the way a POSIX shell
// would for a simple command: quotes and backslashes are honoured, and
// nothing is expanded. Control operators (&&, ||, ;, |) end a command; the
// result lists the commands in order. Redirections, substitutions and
// globs make the line something cwm will not take apart: complex is set and
// the caller runs the line with bash as written.
func splitWords(line string) (cmds [][]string, complex bool, err error) {
	var (
		words  []string
		cur    strings.Builder
		inWord bool
		flush  = func() {
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		}
		endCmd = func() {
			flush()
			if len(words) > 0 {
				cmds = append(cmds, words)
				words = nil
			}
		}
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == '\\':
			if i+1 < len(line) {
				i++
				if line[i] != '\n' { // a backslash-newline joins lines
					cur.WriteByte(line[i])
					inWord = true
				}
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, false, fmt.Errorf("unterminated single quote in %q", line)
			}
			cur.WriteString(line[i+1 : i+1+j])
			inWord = true
			i += j + 1
		case c == '"':
			inWord = true
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				switch {
				case line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`\n", line[i+1]) >= 0:
					i++
					cur.WriteByte(line[i])
				case line[i] == '$' || line[i] == '`':
					complex = true
					cur.WriteByte(line[i])
				default:
					cur.WriteByte(line[i])
				}
			}
			if i >= len(line) {
				return nil, false, fmt.Errorf("unterminated double quote in %q", line)
			}
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			if c == '\n' {
				endCmd()
			} else {
				flush()
			}
		case c == '#' && !inWord:
			// A comment runs to the end of the line.
			for i < len(line) && line[i] != '\n' {
				i++
			}
			endCmd()
		case c == ';' || c == '&' || c == '|':
			if c == '&' && (i+1 >= len(line) || line[i+1] != '&') {
				complex = true // background job
			}
			if c == '|' && (i+1 >= len(line) || line[i+1] != '|') {
				complex = true // pipeline: the status is the last command's
			}
			if i+1 < len(line) && line[i+1] == c {
				i++
			}
			endCmd()
		case c == '<' || c == '>' || c == '$' || c == '`' || c == '(' || c == ')' || c == '*' || c == '?' || c == '{' || c == '}':
			complex = true
			cur.WriteByte(c)
			inWord = true
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	endCmd()
	return cmds, complex, nil
}

// quoteWord quotes a word for bash when it needs quoting.
func quoteWord(w string) string {
	if w == "" {
		return "''"
	}
	safe := true
	for _, r := range w {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./=:,+@%", r)) {
			safe = false
			break
		}
	}
	if safe {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

// joinWords is the inverse of splitWords for one simple command.
func joinWords(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		q[i] = quoteWord(w)
	}
	return strings.Join(q, " ")
}

// Words splits a command line as a shell would for simple commands (see
// splitWords); complex reports redirections, pipes, substitutions or
// globs, which only bash itself can run faithfully.
func Words(line string) (cmds [][]string, complex bool, err error) { return splitWords(line) }

// Join quotes words for bash and joins them into one command line.
func Join(words []string) string { return joinWords(words) }
