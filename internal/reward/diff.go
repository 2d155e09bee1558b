package reward

import (
	"cwm/internal/lazyre"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// PatchedFile is one file of a patch as Python's unidiff 0.7.5 reads it,
// which is what CWM's similarity is defined on. The parser below follows
// unidiff's rules one for one, quirks included (a quoted name with a
// space is split at the wrong space; plain diffs whose two names differ
// are renames), because any deviation changes the reward.
type PatchedFile struct {
	// SourceFile and TargetFile are the names as written, prefixes
	// ("a/", "b/") and quotes included; "/dev/null" for a new or deleted
	// file.
	SourceFile, TargetFile string
	// Binary marks a binary change ("Binary files ... differ", "GIT
	// binary patch"); it has no hunks.
	Binary bool
	Hunks  []Hunk
}

// Hunk is one @@ section.
type Hunk struct {
	SourceStart, SourceLength, TargetStart, TargetLength int
	// Section is the text after the closing @@ (git's function context),
	// without the one space that separates it.
	Section string
	// Lines are the body lines as unidiff prints them: the line type
	// (' ', '-', '+' or '\') and the value with its line terminator. An
	// empty line counts as context; a blank line after the hunk is kept
	// as "\n".
	Lines []string
}

// String is unidiff's str(hunk): the header with both lengths written out
// (even where the patch left them out) and the lines as they came.
func (h Hunk) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "@@ -%d,%d +%d,%d @@", h.SourceStart, h.SourceLength, h.TargetStart, h.TargetLength)
	if h.Section != "" {
		b.WriteString(" " + h.Section)
	}
	b.WriteByte('\n')
	for _, l := range h.Lines {
		b.WriteString(l)
	}
	return b.String()
}

const devNull = "/dev/null"

// IsRename is unidiff's is_rename: neither side is /dev/null and the names
// differ after their first two characters (the a/ and b/ prefixes, or
// whatever stands there).
func (f PatchedFile) IsRename() bool {
	return f.SourceFile != devNull && f.TargetFile != devNull && from2(f.SourceFile) != from2(f.TargetFile)
}

// from2 is Python's s[2:].
func from2(s string) string {
	if len(s) < 2 {
		return ""
	}
	return s[2:]
}

// Path is unidiff's path: the source name (the target for new files and
// renames) without an a/ or b/ prefix.
func (f PatchedFile) Path() string {
	p := f.SourceFile
	if p == devNull || (f.IsRename() && f.TargetFile != devNull) {
		p = f.TargetFile
	}
	if strings.HasPrefix(p, "a/") || strings.HasPrefix(p, "b/") {
		p = p[2:]
	}
	return p
}

// pySpace lists what Python's \s and str.isspace accept beyond Go's
// unicode.IsSpace: the ASCII separators U+001C to U+001F.
const pySpace = `\t\n\v\f\r \x{1c}-\x{1f}\x{85}\x{a0}\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}`

// unidiff 0.7.5's patterns, for lines that keep their "\n" as Python's do.
// Go's regexp picks the submatches a backtracking engine would, so the
// greedy and lazy parts split names as in Python. Python's $ also matches
// before a final "\n", hence \n?$.
var (
	reSourceFilename = lazyre.New(`^--- ([^\t\n]+)(?:\t([^\n]+))?`)
	reTargetFilename = lazyre.New(`^\+\+\+ ([^\t\n]+)(?:\t([^\n]+))?`)
	reGitHeaders     = lazyre.List(
		`^diff --git (a/[^\t\n]+) (b/[^\t\n]+)`,
		`^diff --git (.*://[^\t\n]+) (.*://[^\t\n]+)`,
		`^diff --git ([^\t\n]+) ([^\t\n]+)`,
	)
	reDeletedFile    = lazyre.New(`^deleted file mode \d+\n?$`)
	reNewFile        = lazyre.New(`^new file mode \d+\n?$`)
	reHunkHeader     = lazyre.New(`^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@[ ]?(.*)`)
	reHunkBodyLine   = lazyre.New(`(?s)^([- +\\])(.*)`)
	reHunkEmptyLine  = lazyre.New(`(?s)^([- +\\]?)([\r\n]{1,2})`)
	reNoNewline      = lazyre.New(`^\\ No newline at end of file`)
	reBinaryDiff     = lazyre.New(`^Binary files? ([^\t]+?)(?:\t([` + pySpace + `0-9:+-]+))?(?: and ([^\t]+?)(?:\t([` + pySpace + `0-9:+-]+))?)? (differ|has changed)`)
	noNewlineMarker  = "\\ No newline at end of file\n"
	gitBinaryPatchLn = "GIT binary patch\n"
)

// ErrPatch is wrapped by the errors of patches that unidiff rejects with an
// error CWM catches (UnidiffParseError, UnboundLocalError): CWM then
// treats the patch as changing no file.
var ErrPatch = errors.New("unparseable patch")

// ErrPatchCrash is wrapped by the errors of patches on which unidiff fails
// with an exception CWM does not catch (a "GIT binary patch" line outside
// any file): CWM then records no similarity at all.
var ErrPatchCrash = errors.New("patch crashes unidiff")

// ParsePatch reads a patch as unidiff's PatchSet does. Text outside file
// sections (a mail, a commit message) is ignored.
func ParsePatch(patch string) ([]PatchedFile, error) {
	p := &patchParser{lines: splitLines(patch)}
	if err := p.parse(); err != nil {
		return nil, err
	}
	files := make([]PatchedFile, len(p.files))
	for i, f := range p.files {
		files[i] = *f
	}
	return files, nil
}

// splitLines splits as iterating over a Python StringIO does: after every
// "\n", which stays with its line; "\r" is an ordinary character.
func splitLines(s string) []string {
	var out []string
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			return append(out, s)
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

type patchParser struct {
	lines []string
	n     int // index of the next line
	files []*PatchedFile
	cur   *PatchedFile
	// inInfo is unidiff's "patch_info is not None": a git header or
	// other non-hunk lines are being read.
	inInfo bool
	// sourceFile and sourceTimestamp are the Python locals of the same
	// names: set by earlier lines, possibly of another file, and unbound
	// until first set.
	sourceFile           string
	sourceBound, tsBound bool
}

func parseErrorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrPatch, fmt.Sprintf(format, args...))
}

func (p *patchParser) parse() error {
	for p.n < len(p.lines) {
		line := p.lines[p.n]
		p.n++
		if m := gitHeader(line); m != nil {
			p.inInfo = true
			p.sourceFile, p.sourceBound = m[1], true
			p.cur = &PatchedFile{SourceFile: m[1], TargetFile: m[2]}
			p.files = append(p.files, p.cur)
			continue
		}
		if reNewFile().MatchString(line) || reDeletedFile().MatchString(line) {
			if p.cur == nil || !p.inInfo {
				return parseErrorf("unexpected %q", strings.TrimSuffix(line, "\n"))
			}
			if strings.HasPrefix(line, "new") {
				p.cur.SourceFile = devNull
			} else {
				p.cur.TargetFile = devNull
			}
			continue
		}
		if m := reSourceFilename().FindStringSubmatch(line); m != nil {
			p.sourceFile, p.sourceBound, p.tsBound = m[1], true, true
			// A git header's file continues when the names agree.
			if p.cur != nil && p.cur.SourceFile != m[1] {
				p.cur = nil
			}
			continue
		}
		if m := reTargetFilename().FindStringSubmatch(line); m != nil {
			if p.cur != nil && p.cur.TargetFile != m[1] {
				return parseErrorf("target without source: %q", strings.TrimSuffix(line, "\n"))
			}
			if p.cur == nil {
				if !p.sourceBound || !p.tsBound {
					return parseErrorf("%q before any --- line", strings.TrimSuffix(line, "\n"))
				}
				p.cur = &PatchedFile{SourceFile: p.sourceFile, TargetFile: m[1]}
				p.files = append(p.files, p.cur)
				p.inInfo = false
			}
			continue
		}
		if reHunkHeader().MatchString(line) {
			p.inInfo = false
			if p.cur == nil {
				return parseErrorf("hunk outside a file: %q", strings.TrimSuffix(line, "\n"))
			}
			if err := p.parseHunk(line); err != nil {
				return err
			}
			continue
		}
		if reNoNewline().MatchString(line) {
			if p.cur == nil {
				return parseErrorf("no-newline marker outside a file")
			}
			if err := p.appendToLastHunk(noNewlineMarker, "no-newline marker"); err != nil {
				return err
			}
			continue
		}
		if line == "\n" && p.cur != nil {
			if err := p.appendToLastHunk("\n", "blank line"); err != nil {
				return err
			}
			continue
		}
		// Anything else is extended header information, which ends the
		// current file unless a header is being read.
		if !p.inInfo {
			p.cur = nil
			p.inInfo = true
		}
		if m := reBinaryDiff().FindStringSubmatch(line); m != nil {
			p.sourceFile, p.sourceBound = m[1], true
			if p.cur != nil {
				p.cur.Binary = true
			} else {
				// The target name may be missing ("Binary file x has
				// changed"); binary files are never compared anyway.
				p.files = append(p.files, &PatchedFile{SourceFile: m[1], TargetFile: m[3], Binary: true})
			}
			p.cur, p.inInfo = nil, false
			continue
		}
		if line == gitBinaryPatchLn {
			if p.cur == nil {
				return fmt.Errorf("%w: %q outside a file", ErrPatchCrash, strings.TrimSuffix(line, "\n"))
			}
			p.cur.Binary = true
			p.cur, p.inInfo = nil, false
		}
	}
	return nil
}

func gitHeader(line string) []string {
	for _, re := range reGitHeaders() {
		if m := re.FindStringSubmatch(line); m != nil {
			return m
		}
	}
	return nil
}

func (p *patchParser) appendToLastHunk(text, what string) error {
	if len(p.cur.Hunks) == 0 {
		return parseErrorf("%s before any hunk", what)
	}
	h := &p.cur.Hunks[len(p.cur.Hunks)-1]
	h.Lines = append(h.Lines, text)
	return nil
}

// parseHunk reads a hunk's body: lines until both line counts are reached.
func (p *patchParser) parseHunk(header string) error {
	m := reHunkHeader().FindStringSubmatch(header)
	nums := [4]int{}
	for i := range nums {
		s := m[i+1]
		if s == "" { // a missing length means 1
			nums[i] = 1
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return parseErrorf("hunk header %q: %v", strings.TrimSuffix(header, "\n"), err)
		}
		nums[i] = n
	}
	h := Hunk{SourceStart: nums[0], SourceLength: nums[1], TargetStart: nums[2], TargetLength: nums[3], Section: m[5]}
	src, tgt := h.SourceStart, h.TargetStart
	srcEnd, tgtEnd := src+h.SourceLength, tgt+h.TargetLength
	for p.n < len(p.lines) {
		line := p.lines[p.n]
		p.n++
		lm := reHunkBodyLine().FindStringSubmatch(line)
		if lm == nil {
			lm = reHunkEmptyLine().FindStringSubmatch(line)
		}
		if lm == nil {
			return parseErrorf("hunk line expected: %q", strings.TrimSuffix(line, "\n"))
		}
		kind := lm[1]
		switch kind {
		case "", " ":
			kind = " " // an empty line is context
			src++
			tgt++
		case "-":
			src++
		case "+":
			tgt++
		}
		if src > srcEnd || tgt > tgtEnd {
			return parseErrorf("hunk %q is longer than its header says", strings.TrimSuffix(header, "\n"))
		}
		h.Lines = append(h.Lines, kind+lm[2])
		if src == srcEnd && tgt == tgtEnd {
			break
		}
	}
	if src < srcEnd || tgt < tgtEnd {
		return parseErrorf("hunk %q is shorter than its header says", strings.TrimSuffix(header, "\n"))
	}
	p.cur.Hunks = append(p.cur.Hunks, h)
	return nil
}
