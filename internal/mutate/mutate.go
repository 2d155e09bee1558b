// Package mutate puts bugs into Python functions: the five mutation families
// of CWM's mutate-fix data (CWM-SPEC section 3) as operators over Python's
// own syntax trees.
//
// The analysis runs as mutate.py (standard library only, embedded here
// with its two modules) on the environment's interpreter inside a
// sandbox, because only that interpreter can say whether a mutant parses
// and compiles for the Python the tests run on. Python's ast decides where an operator applies; the
// mutant itself is a handful of byte-range edits of the file's text, so its
// diff touches only the mutated span and leaves formatting and comments
// everywhere else alone. Validation (do tests fail, is the fix verified)
// belongs to the tasks stage; this package only proposes.
package mutate

import (
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"cwm/internal/sandbox"
)

// The analysis is four files run together: mutate.py imports the others
// from its own directory.
//
//go:embed mutate.py operators.py procedural.py syntax.py
var pyFiles embed.FS

// The five families of CWM-SPEC section 3, in the order the spec lists them.
const (
	Functions  = "functions"  // remove part or all of a body
	Arguments  = "arguments"  // remove a parameter, reorder call arguments
	Variables  = "variables"  // swap every occurrence of a pair
	Statements = "statements" // remove an import or a return
	Operators  = "operators"  // replace a binary, unary, comparison or boolean operator
)

// Procedural holds three of SWE-smith's procedural modifications (invert
// an if/else, change a constant, swap operands): a sixth family, used only
// when asked for, since CWM's data has the five.
const Procedural = "procedural"

// Families lists CWM's five families, the default.
var Families = []string{Functions, Arguments, Variables, Statements, Operators}

// AllFamilies lists every family mutate.py knows.
var AllFamilies = append(append([]string{}, Families...), Procedural)

// FamilyOperators maps each family to its operators.
var FamilyOperators = map[string][]string{
	Functions:  {"remove_body", "remove_part"},
	Arguments:  {"remove_parameter", "reorder_call_arguments"},
	Variables:  {"swap_variables"},
	Statements: {"remove_import", "remove_import_name", "remove_return"},
	Operators:  {"binary_operator", "unary_operator", "comparison_operator", "boolean_operator"},
	Procedural: {"invert_if", "change_constant", "swap_operands"},
}

// Func names a function the way coverage does: qualified name and first
// line (co_firstlineno: the first decorator's line for a decorated one).
type Func struct {
	Name string
	Line int
}

func (f Func) MarshalJSON() ([]byte, error) { return json.Marshal([]any{f.Name, f.Line}) }

func (f *Func) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 2 {
		return fmt.Errorf("function %s: want [name, line]", b)
	}
	if err := json.Unmarshal(raw[0], &f.Name); err != nil {
		return err
	}
	return json.Unmarshal(raw[1], &f.Line)
}

// Edit replaces the bytes [Start, End) of a file with Text.
type Edit struct {
	Start, End int
	Text       string
}

func (e Edit) MarshalJSON() ([]byte, error) { return json.Marshal([]any{e.Start, e.End, e.Text}) }

func (e *Edit) UnmarshalJSON(b []byte) error {
	var raw []json.RawMessage
	if err := json.Unmarshal(b, &raw); err != nil || len(raw) != 3 {
		return fmt.Errorf("edit %s: want [start, end, text]", b)
	}
	for i, dst := range []any{&e.Start, &e.End, &e.Text} {
		if err := json.Unmarshal(raw[i], dst); err != nil {
			return err
		}
	}
	return nil
}

// Mutant is one proposed bug: edits of one file, in one function.
type Mutant struct {
	File     string `json:"file"`
	Function string `json:"function"`
	Line     int    `json:"line"`
	Family   string `json:"family"`
	Operator string `json:"operator"`
	// Desc says what the mutant does, with a line number; it is for logs
	// and decisions, never for a problem statement.
	Desc  string `json:"desc"`
	Edits []Edit `json:"edits"`
	// Lines is the first and last line of the mutated span.
	Lines [2]int `json:"lines"`
	// Executed reports whether a passing test executes the mutated span
	// (for an import: a line of a covered function that reads its names).
	Executed bool `json:"executed"`
	// Affects are the covered functions whose behaviour the mutant
	// changes: the function itself, or every covered function reading a
	// removed module-level import. Their tests are the covering tests.
	Affects []Func `json:"affects"`
}

// Apply returns src with the mutant's edits made.
func (m Mutant) Apply(src []byte) ([]byte, error) {
	var b strings.Builder
	pos := 0
	for _, e := range m.Edits {
		if e.Start < pos || e.End < e.Start || e.End > len(src) {
			return nil, fmt.Errorf("mutant %s of %s: edit [%d,%d) out of order or out of the file (%d bytes)", m.Operator, m.File, e.Start, e.End, len(src))
		}
		b.Write(src[pos:e.Start])
		b.WriteString(e.Text)
		pos = e.End
	}
	b.Write(src[pos:])
	return []byte(b.String()), nil
}

// Key is the content hash that identifies a bug: two mutants with the same
// key produce the same bug patch, whatever operator made them.
func Key(file string, mutated []byte) string {
	h := sha256.New()
	h.Write([]byte(file))
	h.Write([]byte{0})
	h.Write(mutated)
	return hex.EncodeToString(h.Sum(nil))
}

// FileSpec is what to mutate in one file.
type FileSpec struct {
	// Functions are the covered functions of the file.
	Functions []Func `json:"functions"`
	// Executed are the lines of the file some passing test executes.
	Executed []int `json:"executed"`
}

// Request asks for the mutants of some functions.
type Request struct {
	// Root is the repository inside the sandbox (default /repo).
	Root string `json:"root"`
	// Seed makes the sampling of sites reproducible.
	Seed int64 `json:"seed"`
	// Families to apply (default CWM's five).
	Families []string `json:"families,omitempty"`
	// PerOperator caps the sites one operator mutates in one function,
	// sampled with the seed (default 8).
	PerOperator int                 `json:"per_operator,omitempty"`
	Files       map[string]FileSpec `json:"files"`
	// Python is the interpreter (default python3 on the sandbox's PATH,
	// the environment's venv first).
	Python string `json:"-"`
	// Timeout bounds the analysis (default 10 minutes).
	Timeout time.Duration `json:"-"`
}

// Stats counts the sites one family found in one function (a module-level
// import's sites count for the first covered function reading it), and
// those dropped before becoming mutants.
type Stats struct {
	File      string `json:"file"`
	Function  string `json:"function"`
	Line      int    `json:"line"`
	Family    string `json:"family"`
	Sites     int    `json:"sites"`
	Identical int    `json:"identical"` // same text, or same tree, as the original
	Syntax    int    `json:"syntax"`    // does not compile
}

// Result is what mutate.py found.
type Result struct {
	Mutants []Mutant `json:"mutants"`
	Stats   []Stats  `json:"stats"`
	// Unmatched are covered functions not found in the source (the file
	// changed since coverage was computed, or a name cwm cannot place).
	Unmatched []string `json:"unmatched"`
	// Errors are files that could not be analysed (not UTF-8, syntax
	// errors).
	Errors []string `json:"errors"`
}

// FamilyStats sums the stats per family.
func (r *Result) FamilyStats() map[string]Stats {
	out := map[string]Stats{}
	for _, s := range r.Stats {
		t := out[s.Family]
		t.Family = s.Family
		t.Sites += s.Sites
		t.Identical += s.Identical
		t.Syntax += s.Syntax
		out[s.Family] = t
	}
	return out
}

const workDir = "/tmp/cwm-mutate"

// Generate runs mutate.py in s and returns the mutants of the requested
// functions. The sandbox's files are left as they were, apart from
// workDir.
func Generate(ctx context.Context, s *sandbox.Sandbox, req Request) (*Result, error) {
	if req.Root == "" {
		req.Root = "/repo"
	}
	if req.Python == "" {
		req.Python = "python3"
	}
	if req.Timeout <= 0 {
		req.Timeout = 10 * time.Minute
	}
	for _, f := range req.Families {
		if _, ok := FamilyOperators[f]; !ok {
			return nil, fmt.Errorf("unknown mutation family %q (want one of %s)", f, strings.Join(AllFamilies, ", "))
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	if res, err := s.Exec(ctx, sandbox.Cmd{Args: []string{"mkdir", "-p", workDir}}); err != nil {
		return nil, fmt.Errorf("prepare mutation analysis: %w", err)
	} else if !res.Success() {
		return nil, fmt.Errorf("prepare mutation analysis: mkdir %s: %s", workDir, res.Describe())
	}
	for _, name := range []string{"mutate.py", "operators.py", "procedural.py", "syntax.py"} {
		data, err := pyFiles.ReadFile(name)
		if err != nil {
			return nil, err
		}
		if err := s.WriteFile(ctx, workDir+"/"+name, data, 0o644); err != nil {
			return nil, fmt.Errorf("prepare mutation analysis: %w", err)
		}
	}
	if err := s.WriteFile(ctx, workDir+"/request.json", data, 0o644); err != nil {
		return nil, fmt.Errorf("prepare mutation analysis: %w", err)
	}
	out := workDir + "/mutants.json"
	res, err := s.Exec(ctx, sandbox.Cmd{
		Args:    []string{req.Python, workDir + "/mutate.py", workDir + "/request.json", out},
		Env:     []string{"PYTHONDONTWRITEBYTECODE=1", "PYTHONHASHSEED=0"},
		Timeout: req.Timeout,
	})
	if err != nil {
		return nil, fmt.Errorf("run mutation analysis: %w", err)
	}
	if !res.Success() {
		return nil, fmt.Errorf("mutation analysis failed: %s: %s", res.Describe(), lastLines(res.Stderr, 5))
	}
	raw, err := s.ReadFile(ctx, out, 0)
	if err != nil {
		return nil, fmt.Errorf("read mutants: %w", err)
	}
	var r Result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("read mutants: %w", err)
	}
	return &r, nil
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
