package reward

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// FileDiff is the change to one file in a unified diff.
type FileDiff struct {
	// OldPath and NewPath are the paths before and after, without the
	// a/ and b/ prefixes; "" stands for /dev/null (a new or deleted file).
	OldPath, NewPath string
	// Header holds git's extended header lines other than "index": modes,
	// renames, copies, similarity, "Binary files ... differ".
	Header []string
	Hunks  []Hunk
}

// Path is the file's name after the change, or before it for a deletion.
func (f FileDiff) Path() string {
	if f.NewPath == "" {
		return f.OldPath
	}
	return f.NewPath
}

// Hunk is one @@ section.
type Hunk struct {
	OldStart, OldLines, NewStart, NewLines int
	// Section is the text after the closing @@ (git's function context).
	Section string
	// Lines are the body lines with their first character: ' ' context,
	// '-' removed, '+' added, '\' a "\ No newline at end of file" marker.
	Lines []string
}

var hunkHeader = regexp.MustCompile(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@(.*)$`)

// ParseDiff parses a unified diff: git's format (diff --git headers, new,
// deleted, renamed and copied files, mode changes, binary files, quoted
// paths) and plain diff -u output (--- and +++ lines, with or without
// timestamps). Text outside file sections, such as a commit message before
// the first diff or a mail signature after the last hunk, is ignored, as git
// apply ignores it. Hunk line counts are used to find the end of each hunk,
// so removed or added lines that look like headers ("--- x" when "-- x" is
// removed) are read correctly. A hunk with fewer or more body lines than
// its header announces is an error. Hunks of a file that appears twice are
// concatenated.
func ParseDiff(patch string) ([]FileDiff, error) {
	if patch == "" {
		return nil, nil
	}
	p := &diffParser{lines: strings.Split(strings.TrimSuffix(patch, "\n"), "\n")}
	if err := p.parse(); err != nil {
		return nil, err
	}
	return p.merged(), nil
}

type diffParser struct {
	lines []string
	n     int // index of the next line
	files []FileDiff
	// inGitHeader is set from a diff --git line until its first hunk, so
	// that --- and +++ lines complete that file instead of starting one.
	inGitHeader bool
}

func (p *diffParser) errorf(format string, args ...any) error {
	return fmt.Errorf("diff line %d: %s", p.n, fmt.Sprintf(format, args...))
}

func (p *diffParser) cur() *FileDiff { return &p.files[len(p.files)-1] }

func (p *diffParser) parse() error {
	for p.n < len(p.lines) {
		line := p.lines[p.n]
		p.n++
		switch {
		case strings.HasPrefix(line, "diff --git "):
			f, err := parseGitHeader(line)
			if err != nil {
				return p.errorf("%v", err)
			}
			p.files = append(p.files, f)
			p.inGitHeader = true
		case strings.HasPrefix(line, "--- ") && p.n < len(p.lines) && strings.HasPrefix(p.lines[p.n], "+++ "):
			oldPath, err := parsePathLine(strings.TrimPrefix(line, "--- "), "a/")
			if err != nil {
				return p.errorf("%v", err)
			}
			newPath, err := parsePathLine(strings.TrimPrefix(p.lines[p.n], "+++ "), "b/")
			p.n++
			if err != nil {
				return p.errorf("%v", err)
			}
			if !p.inGitHeader {
				p.files = append(p.files, FileDiff{})
			}
			f := p.cur()
			f.OldPath, f.NewPath = oldPath, newPath
			p.inGitHeader = false
		case strings.HasPrefix(line, "@@ "):
			if len(p.files) == 0 {
				return p.errorf("hunk before any file header")
			}
			p.inGitHeader = false
			h, err := p.parseHunk(line)
			if err != nil {
				return err
			}
			f := p.cur()
			f.Hunks = append(f.Hunks, h)
		case p.inGitHeader:
			p.gitHeaderLine(line)
		}
	}
	return nil
}

// gitHeaderLine records an extended header line of the current git file.
func (p *diffParser) gitHeaderLine(line string) {
	f := p.cur()
	from, isFrom := cutAnyPrefix(line, "rename from ", "copy from ")
	to, isTo := cutAnyPrefix(line, "rename to ", "copy to ")
	switch {
	case strings.HasPrefix(line, "index "):
		// Blob ids differ between any two repositories; not part of the change.
		return
	case isFrom:
		if path, err := unquotePath(from); err == nil {
			f.OldPath = path
		}
	case isTo:
		if path, err := unquotePath(to); err == nil {
			f.NewPath = path
		}
	case strings.HasPrefix(line, "new file mode "):
		f.OldPath = ""
	case strings.HasPrefix(line, "deleted file mode "):
		f.NewPath = ""
	case line == "GIT binary patch":
		// The base85 data runs to a blank line after the forward and the
		// reverse patch; it is not text to compare.
		f.Header = append(f.Header, line)
		for blanks := 0; p.n < len(p.lines) && blanks < 2; p.n++ {
			if p.lines[p.n] == "" {
				blanks++
			}
		}
		return
	case line == "":
		return
	}
	f.Header = append(f.Header, line)
}

func cutAnyPrefix(s string, prefixes ...string) (string, bool) {
	for _, pre := range prefixes {
		if rest, ok := strings.CutPrefix(s, pre); ok {
			return rest, true
		}
	}
	return "", false
}

func (p *diffParser) parseHunk(header string) (Hunk, error) {
	m := hunkHeader.FindStringSubmatch(header)
	if m == nil {
		return Hunk{}, p.errorf("malformed hunk header %q", header)
	}
	num := func(s string) int {
		if s == "" {
			return 1 // "@@ -3 +3 @@" means one line
		}
		n, _ := strconv.Atoi(s)
		return n
	}
	h := Hunk{OldStart: num(m[1]), OldLines: num(m[2]), NewStart: num(m[3]), NewLines: num(m[4]), Section: strings.TrimPrefix(m[5], " ")}
	oldLeft, newLeft := h.OldLines, h.NewLines
	for oldLeft > 0 || newLeft > 0 {
		if p.n >= len(p.lines) {
			return h, p.errorf("hunk %q ends early: %d old and %d new lines missing", header, oldLeft, newLeft)
		}
		line := p.lines[p.n]
		p.n++
		switch {
		case line == "":
			// Editors and mailers strip the space of an empty context
			// line; git apply accepts that too.
			line = " "
			oldLeft--
			newLeft--
		case line[0] == ' ':
			oldLeft--
			newLeft--
		case line[0] == '-':
			oldLeft--
		case line[0] == '+':
			newLeft--
		case line[0] == '\\':
		default:
			return h, p.errorf("hunk %q ends early: %d old and %d new lines missing", header, oldLeft, newLeft)
		}
		if oldLeft < 0 || newLeft < 0 {
			return h, p.errorf("hunk %q has more lines than its header says", header)
		}
		h.Lines = append(h.Lines, line)
	}
	// A missing newline at the end of the last line is marked after it.
	if p.n < len(p.lines) && strings.HasPrefix(p.lines[p.n], `\`) {
		h.Lines = append(h.Lines, p.lines[p.n])
		p.n++
	}
	return h, nil
}

// parseGitHeader reads the paths of "diff --git a/x b/y". They are only a
// fallback: ---/+++ and rename lines, which are unambiguous, override them.
func parseGitHeader(line string) (FileDiff, error) {
	rest := strings.TrimPrefix(line, "diff --git ")
	if strings.HasPrefix(rest, `"`) || strings.HasSuffix(rest, `"`) {
		a, b, err := splitQuoted(rest)
		if err != nil {
			return FileDiff{}, fmt.Errorf("diff --git header %q: %v", line, err)
		}
		return FileDiff{OldPath: strings.TrimPrefix(a, "a/"), NewPath: strings.TrimPrefix(b, "b/")}, nil
	}
	// Unquoted names may contain spaces; the name is the same on both sides
	// unless the file is renamed, in which case rename lines follow. So
	// look for "a/P b/P" first, as git does.
	if (len(rest)-1)%2 == 0 {
		half := (len(rest) - 1) / 2
		if rest[half] == ' ' && strings.HasPrefix(rest, "a/") && strings.HasPrefix(rest[half+1:], "b/") && rest[2:half] == rest[half+3:] {
			return FileDiff{OldPath: rest[2:half], NewPath: rest[2:half]}, nil
		}
	}
	if i := strings.LastIndex(rest, " b/"); i >= 0 {
		return FileDiff{OldPath: strings.TrimPrefix(rest[:i], "a/"), NewPath: rest[i+3:]}, nil
	}
	return FileDiff{}, fmt.Errorf("diff --git header %q: cannot split the two paths", line)
}

// splitQuoted splits two space-separated names, either of them quoted.
func splitQuoted(s string) (string, string, error) {
	first, rest, err := cutName(s)
	if err != nil {
		return "", "", err
	}
	second, tail, err := cutName(strings.TrimPrefix(rest, " "))
	if err != nil {
		return "", "", err
	}
	if tail != "" {
		return "", "", fmt.Errorf("unexpected %q after the names", tail)
	}
	return first, second, nil
}

// cutName reads one name from the start of s: a C-quoted string, or text up
// to the next space.
func cutName(s string) (name, rest string, err error) {
	if !strings.HasPrefix(s, `"`) {
		name, rest, _ = strings.Cut(s, " ")
		return name, rest, nil
	}
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			name, err = strconv.Unquote(s[:i+1])
			return name, s[i+1:], err
		}
	}
	return "", "", fmt.Errorf("unterminated quoted name %q", s)
}

// parsePathLine reads the name of a --- or +++ line: "/dev/null" is "",
// git's a/ or b/ prefix is dropped, and so is a tab-separated timestamp.
func parsePathLine(s, prefix string) (string, error) {
	name, err := unquotePath(s)
	if err != nil {
		return "", err
	}
	if name == "/dev/null" {
		return "", nil
	}
	return strings.TrimPrefix(name, prefix), nil
}

// unquotePath undoes git's C-style quoting of unusual names; an unquoted
// name ends at a tab (git adds one after names with spaces, diff -u one
// before the timestamp).
func unquotePath(s string) (string, error) {
	if strings.HasPrefix(s, `"`) {
		name, _, err := cutName(s)
		if err != nil {
			return "", err
		}
		return name, nil
	}
	name, _, _ := strings.Cut(s, "\t")
	return name, nil
}

// merged returns the files with duplicates of a path folded into the first.
func (p *diffParser) merged() []FileDiff {
	var out []FileDiff
	index := map[string]int{}
	for _, f := range p.files {
		if i, ok := index[f.Path()]; ok {
			out[i].Header = append(out[i].Header, f.Header...)
			out[i].Hunks = append(out[i].Hunks, f.Hunks...)
			continue
		}
		index[f.Path()] = len(out)
		out = append(out, f)
	}
	return out
}
