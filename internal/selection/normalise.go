package selection

import (
	"sort"
	"strconv"
	"strings"
)

// Normalise returns the canonical form of a unified diff, such that two
// patches with the same canonical form make the same program. It is ""
// for a patch that changes nothing a program sees (empty, or only blank
// lines, trailing whitespace and comments). What counts as equal:
//
//   - context lines, hunk headers' lengths, hunk and file order, and
//     `diff --git`/`index`/mode lines do not count: a patch is the set of
//     its files, each the list of its change blocks (maximal runs of -
//     and + lines) sorted by the old line where each starts;
//   - in every changed line, trailing whitespace does not count;
//   - in Python files (.py, .pyi), a comment (from a # outside a string
//     literal to the end of the line) does not count, nor whitespace
//     between two tokens unless it separates two word characters
//     (`a+b` equals `a + b`, `not x` differs from `notx`); leading
//     indentation does count, as Python reads it;
//   - changed lines that are empty after that (blank lines, comment-only
//     lines) do not count, and a block left with nothing does not either.
//
// What still differs: string quotes ('a' and "a"), the text of
// docstrings and other string literals, a change placed at another line,
// renamed variables, any rewrite that is equivalent only by meaning.
// Lines inside a multi-line string are read as code, so a "#" in a
// docstring's line starts a comment there: a docstring edit may compare
// equal to another, which does not change what a program computes.
func Normalise(patch string) string {
	files := parseDiff(patch)
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, name := range names {
		blocks := files[name]
		sort.SliceStable(blocks, func(i, j int) bool { return blocks[i].at < blocks[j].at })
		py := strings.HasSuffix(name, ".py") || strings.HasSuffix(name, ".pyi")
		var body strings.Builder
		for _, bl := range blocks {
			del, add := normLines(bl.del, py), normLines(bl.add, py)
			if len(del) == 0 && len(add) == 0 {
				continue
			}
			body.WriteString("@" + strconv.Itoa(bl.at) + "\n")
			for _, l := range del {
				body.WriteString("-" + l + "\n")
			}
			for _, l := range add {
				body.WriteString("+" + l + "\n")
			}
		}
		if body.Len() > 0 {
			b.WriteString("file " + name + "\n" + body.String())
		}
	}
	return b.String()
}

// block is one run of changed lines: at is the old file's line it starts
// at (for a pure insertion, the line it goes before).
type block struct {
	at       int
	del, add []string
}

// parseDiff reads a unified diff into change blocks by file (the new
// name; the old one for a deleted file). Lines it does not understand
// are ignored: a patch that is not a diff normalises to "".
func parseDiff(patch string) map[string][]block {
	files := map[string][]block{}
	var name, oldName string
	var cur *block
	oldLine := 0
	left := [2]int{} // old and new lines the hunk still has
	inHunk := false
	flush := func() {
		if cur != nil && name != "" {
			files[name] = append(files[name], *cur)
		}
		cur = nil
	}
	for _, line := range strings.Split(patch, "\n") {
		line = strings.TrimSuffix(line, "\r")
		switch {
		case strings.HasPrefix(line, "diff --git "):
			flush()
			inHunk, name, oldName = false, "", ""
		case !inHunk && strings.HasPrefix(line, "--- "):
			flush()
			oldName = pathOf(line[4:])
		case !inHunk && strings.HasPrefix(line, "+++ "):
			name = pathOf(line[4:])
			if name == "/dev/null" {
				name = oldName
			}
			files[name] = files[name]
		case strings.HasPrefix(line, "@@ "):
			flush()
			oldLine, left = hunkHeader(line)
			inHunk = left[0]+left[1] > 0
		case !inHunk:
		case strings.HasPrefix(line, "-"):
			if cur == nil {
				cur = &block{at: oldLine}
			}
			cur.del = append(cur.del, line[1:])
			oldLine++
			left[0]--
		case strings.HasPrefix(line, "+"):
			if cur == nil {
				cur = &block{at: oldLine}
			}
			cur.add = append(cur.add, line[1:])
			left[1]--
		case strings.HasPrefix(line, " ") || line == "":
			flush()
			oldLine++
			left[0]--
			left[1]--
		case strings.HasPrefix(line, `\`):
			// "\ No newline at end of file"
		default:
			flush()
			inHunk = false
		}
		if inHunk && left[0] <= 0 && left[1] <= 0 {
			flush()
			inHunk = false
		}
	}
	flush()
	return files
}

// pathOf is the path of a ---/+++ line without its a/ or b/ prefix and
// any timestamp.
func pathOf(s string) string {
	if i := strings.IndexByte(s, '\t'); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "/dev/null" {
		return s
	}
	if strings.HasPrefix(s, "a/") || strings.HasPrefix(s, "b/") {
		s = s[2:]
	}
	return s
}

// hunkHeader reads "@@ -12,7 +12,8 @@": the old start line, and the
// old and new line counts (a missing count is 1).
func hunkHeader(h string) (start int, counts [2]int) {
	f := strings.Fields(h)
	if len(f) < 3 {
		return 0, counts
	}
	for i, r := range f[1:3] {
		r = strings.TrimLeft(r, "-+")
		a, b, ok := strings.Cut(r, ",")
		n, _ := strconv.Atoi(a)
		if i == 0 {
			start = n
		}
		counts[i] = 1
		if ok {
			counts[i], _ = strconv.Atoi(b)
		}
	}
	return start, counts
}

// normLines normalises changed lines and drops those left empty.
func normLines(lines []string, py bool) []string {
	var out []string
	for _, l := range lines {
		l = strings.TrimRight(l, " \t\f\v")
		if py {
			l = normPython(l)
		}
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// normPython drops a line's comment and the whitespace between tokens
// that does not separate two word characters, keeping string literals
// and leading indentation as they are.
func normPython(l string) string {
	body := strings.TrimLeft(l, " \t")
	indent := l[:len(l)-len(body)]
	var b strings.Builder
	b.WriteString(indent)
	var prev byte // the last byte written, 0 at the start
	pendingSpace := false
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case c == '#':
			return strings.TrimRight(b.String(), " \t")
		case c == ' ' || c == '\t':
			pendingSpace = true
			continue
		case c == '"' || c == '\'':
			end := stringEnd(body, i)
			if pendingSpace && isWord(prev) {
				// A prefix such as r"..." touches its quote; a space
				// before a string after a word (return "x") is kept.
				b.WriteByte(' ')
			}
			b.WriteString(body[i:end])
			prev, pendingSpace = c, false
			i = end - 1
			continue
		}
		if pendingSpace && isWord(prev) && isWord(c) {
			b.WriteByte(' ')
		}
		pendingSpace = false
		b.WriteByte(c)
		prev = c
	}
	return b.String()
}

// stringEnd is the index after the string literal starting at s[i]
// (a triple-quoted one too); an unterminated literal runs to the end.
func stringEnd(s string, i int) int {
	q := s[i : i+1]
	if strings.HasPrefix(s[i:], q+q+q) {
		q = q + q + q
	}
	for j := i + len(q); j < len(s); j++ {
		if s[j] == '\\' {
			j++
			continue
		}
		if strings.HasPrefix(s[j:], q) {
			return j + len(q)
		}
	}
	return len(s)
}

func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
