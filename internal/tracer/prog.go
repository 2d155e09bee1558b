package tracer

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
)

// Python3 is CodeContests' language code of Python 3 solutions:
// ContestProblem.Solution.Language in google-deepmind/code_contests'
// contest_problem.proto numbers UNKNOWN_LANGUAGE 0, PYTHON (Python 2) 1,
// CPP 2, PYTHON3 3, JAVA 4, and the published dataset stores that number.
const Python3 = 3

// Problem is one input record of trace prog, in CodeContests' shape;
// fields it does not use (difficulty, cf_rating, incorrect_solutions, ...)
// are ignored.
type Problem struct {
	Name           string    `json:"name"`
	Description    string    `json:"description"`
	PublicTests    Tests     `json:"public_tests"`
	PrivateTests   Tests     `json:"private_tests"`
	GeneratedTests Tests     `json:"generated_tests"`
	Solutions      Solutions `json:"solutions"`
}

// Tests are a problem's tests of one kind: Input[i] on stdin should print
// Output[i].
type Tests struct {
	Input  []string `json:"input"`
	Output []string `json:"output"`
}

// Solutions are a problem's solutions: Solution[i] is in Language[i].
type Solutions struct {
	Language []int    `json:"language"`
	Solution []string `json:"solution"`
}

// TestKinds are the kinds of tests a problem has, in the order they run.
var TestKinds = []string{"public", "private", "generated"}

// tests returns the problem's tests of a kind.
func (p *Problem) tests(kind string) Tests {
	switch kind {
	case "public":
		return p.PublicTests
	case "private":
		return p.PrivateTests
	}
	return p.GeneratedTests
}

// python3 lists the indices of the problem's Python 3 solutions.
func (p *Problem) python3() []int {
	var out []int
	for i, l := range p.Solutions.Language {
		if l == Python3 {
			out = append(out, i)
		}
	}
	return out
}

// ReadProblems reads and checks every record of a CodeContests-shaped
// file before anything runs; a bad line stops it with FILE:LINE: why.
func ReadProblems(path string) ([]Problem, error) {
	var probs []Problem
	seen := map[string]int{}
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		if len(bytes.TrimSpace(line)) == 0 {
			return nil
		}
		var p Problem
		if err := jsonl.Unmarshal(line, &p); err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		if err := checkProblem(&p, seen); err != nil {
			return errkind.Wrap(errkind.Input, err)
		}
		seen[p.Name] = n
		probs = append(probs, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(probs) == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no problems", path)
	}
	return probs, nil
}

// checkProblem says what is wrong with a record.
func checkProblem(p *Problem, seen map[string]int) error {
	switch {
	case p.Name == "":
		return errors.New(`no "name"`)
	case seen[p.Name] > 0:
		return fmt.Errorf("%s: name already used on line %d", p.Name, seen[p.Name])
	case len(p.Solutions.Language) != len(p.Solutions.Solution):
		return fmt.Errorf(`%s: "solutions" has %d languages for %d solutions`, p.Name,
			len(p.Solutions.Language), len(p.Solutions.Solution))
	}
	for _, kind := range TestKinds {
		if t := p.tests(kind); len(t.Input) != len(t.Output) {
			return fmt.Errorf(`%s: "%s_tests" has %d inputs for %d outputs`, p.Name, kind, len(t.Input), len(t.Output))
		}
	}
	return nil
}

// ProgRun is one item of trace prog: a solution of a problem on one of
// its tests, or (Solution -1) the problem itself when it has nothing to
// run, which gets a line saying why.
type ProgRun struct {
	Problem  *Problem
	Solution int
	Kind     string
	Test     int
	// Why is the reason a problem has nothing to run: no_python, no_tests.
	Why string
}

// ID is the run's line id: "NAME/s<solution>/<kind>-<test>", or the
// problem's name for a problem with nothing to run.
func (r ProgRun) ID() string {
	if r.Solution < 0 {
		return r.Problem.Name
	}
	return r.Problem.Name + "/s" + strconv.Itoa(r.Solution) + "/" + r.Kind + "-" + strconv.Itoa(r.Test)
}

// ProgSelect chooses what of each problem runs.
type ProgSelect struct {
	// Solutions caps the Python 3 solutions of a problem, the first ones
	// in the record's order (0: all).
	Solutions int
	// Tests caps the tests of each kind, the first ones (0: all).
	Tests int
	// Kinds are the test kinds run (TestKinds when empty).
	Kinds []string
}

// ProgRuns expands problems into their runs: for each problem, its first
// Python 3 solutions, each on its tests kind by kind. A problem without
// a Python 3 solution, or without a test of the kinds chosen, is one run
// with its reason.
func ProgRuns(probs []Problem, sel ProgSelect) ([]ProgRun, error) {
	kinds := sel.Kinds
	if len(kinds) == 0 {
		kinds = TestKinds
	}
	var runs []ProgRun
	ids := map[string]bool{}
	for i := range probs {
		p := &probs[i]
		sols := p.python3()
		if sel.Solutions > 0 && len(sols) > sel.Solutions {
			sols = sols[:sel.Solutions]
		}
		var mine []ProgRun
		for _, s := range sols {
			for _, kind := range kinds {
				n := len(p.tests(kind).Input)
				if sel.Tests > 0 {
					n = min(n, sel.Tests)
				}
				for t := 0; t < n; t++ {
					mine = append(mine, ProgRun{Problem: p, Solution: s, Kind: kind, Test: t})
				}
			}
		}
		switch {
		case len(sols) == 0:
			mine = []ProgRun{{Problem: p, Solution: -1, Why: "no_python"}}
		case len(mine) == 0:
			mine = []ProgRun{{Problem: p, Solution: -1, Why: "no_tests"}}
		}
		for _, r := range mine {
			id := r.ID()
			if ids[id] {
				return nil, errkind.Errorf(errkind.Input, "problem %q: its line id %q is another problem's too; rename one", p.Name, id)
			}
			ids[id] = true
		}
		runs = append(runs, mine...)
	}
	return runs, nil
}
