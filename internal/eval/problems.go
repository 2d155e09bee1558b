package eval

import (
	"bytes"
	_ "embed"
	"fmt"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/tracer"
)

// Problem is one CruxEval problem: a function f, the argument text of the
// call, and the repr of what the call returns.
type Problem struct {
	ID     string `json:"id"`
	Code   string `json:"code"`
	Input  string `json:"input"`
	Output string `json:"output"`
}

// Call is the call whose output is asked for, "f(INPUT)"; an answer that
// contains it is rejected (CruxEval's rule).
func (p *Problem) Call() string { return "f(" + p.Input + ")" }

//go:embed data/cruxeval.jsonl
var cruxevalData []byte

// CruxEval returns the 800 problems of CRUXEval (MIT licence,
// data/cruxeval.LICENSE), embedded in the binary.
func CruxEval() []Problem {
	ps, err := parseProblems("cruxeval.jsonl", cruxevalData)
	if err != nil {
		panic(err) // the embedded file is checked by the tests
	}
	return ps
}

// LoadProblems reads problems in CruxEval's form ({"id", "code", "input",
// "output"}, other fields ignored); every line is checked before anything
// runs, and a bad one is reported as FILE:LINE: why.
func LoadProblems(path string) ([]Problem, error) {
	var ps []Problem
	seen := map[string]int{}
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		p, err := parseProblem(line, seen)
		if err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		if p.ID != "" {
			seen[p.ID] = n
			ps = append(ps, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, errkind.New(errkind.Input, fmt.Sprintf("%s: no problems", path))
	}
	return ps, nil
}

func parseProblems(name string, data []byte) ([]Problem, error) {
	var ps []Problem
	seen := map[string]int{}
	for n, line := range bytes.Split(data, []byte("\n")) {
		p, err := parseProblem(line, seen)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: %w", name, n+1, err)
		}
		if p.ID != "" {
			seen[p.ID] = n + 1
			ps = append(ps, p)
		}
	}
	return ps, nil
}

// parseProblem decodes one line; a blank line is the zero Problem.
func parseProblem(line []byte, seen map[string]int) (Problem, error) {
	var p Problem
	if len(bytes.TrimSpace(line)) == 0 {
		return p, nil
	}
	var raw struct {
		ID     *string `json:"id"`
		Code   *string `json:"code"`
		Input  *string `json:"input"`
		Output *string `json:"output"`
	}
	if err := jsonl.Unmarshal(line, &raw); err != nil {
		return p, err
	}
	switch {
	case raw.ID == nil || *raw.ID == "":
		return p, fmt.Errorf("no id")
	case raw.Code == nil || raw.Input == nil || raw.Output == nil:
		return p, fmt.Errorf("problem %s: want the fields code, input and output (strings)", *raw.ID)
	}
	if n, ok := seen[*raw.ID]; ok {
		return p, fmt.Errorf("duplicate id %q (first on line %d)", *raw.ID, n)
	}
	if why := tracer.Unrepresentable(*raw.Code); why != "" {
		return p, fmt.Errorf("problem %s cannot be scored in cwm's sandbox: %s", *raw.ID, why)
	}
	return Problem{ID: *raw.ID, Code: *raw.Code, Input: *raw.Input, Output: *raw.Output}, nil
}
