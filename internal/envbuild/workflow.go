package envbuild

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"cwm/internal/env"
	"cwm/internal/lazyre"

	// The YAML parser: CI workflows are YAML with anchors, block scalars
	// and flow sequences, which only a real parser reads correctly.
	"gopkg.in/yaml.v3"
)

type workflowStep struct {
	Name       string            `yaml:"name"`
	Uses       string            `yaml:"uses"`
	Run        string            `yaml:"run"`
	WorkingDir string            `yaml:"working-directory"`
	If         yaml.Node         `yaml:"if"`
	Env        map[string]string `yaml:"env"`
	With       map[string]any    `yaml:"with"`
}

// checksOutOther reports whether a step checks out another repository
// (actions/checkout with a repository of its own): a job that does tests
// that repository against this one (dvc's plugin_tests runs dvc-s3's
// tests), not this one's.
func (st workflowStep) checksOutOther() bool {
	if !strings.HasPrefix(st.Uses, "actions/checkout") {
		return false
	}
	r, _ := st.With["repository"].(string)
	return r != "" && !strings.Contains(r, "github.repository")
}

// downloadsArtifact reports whether a step downloads another job's
// artifacts (actions/download-artifact): a job that does installs and tests
// what that job built (pydantic's core-test-builds-os installs the wheels
// of its core-build job from dist/), which a checkout alone does not have.
func (st workflowStep) downloadsArtifact() bool {
	return strings.HasPrefix(st.Uses, "actions/download-artifact")
}

// otherToolchain reports whether a step sets up another language's
// toolchain (Rust, Node.js, Go, Java): a job that does builds or tests
// that language's part of the project (pydantic's core-test-os runs cargo
// test and the Rust core's Python tests), which a Python base lacks; of two
// jobs that test, the one that needs only Python wins.
func (st workflowStep) otherToolchain() bool {
	return otherToolchainAction().MatchString(st.Uses)
}

var otherToolchainAction = lazyre.New(`^(dtolnay/rust-toolchain|actions-rs/toolchain|actions-rust-lang/setup-rust-toolchain|actions/setup-node|actions/setup-go|actions/setup-java)@`)

type workflowJob struct {
	Steps    []workflowStep `yaml:"steps"`
	Defaults struct {
		Run struct {
			WorkingDir string `yaml:"working-directory"`
		} `yaml:"run"`
	} `yaml:"defaults"`
	Strategy struct {
		Matrix yaml.Node `yaml:"matrix"`
	} `yaml:"strategy"`
	Env    map[string]string `yaml:"env"`
	If     yaml.Node         `yaml:"if"`
	RunsOn yaml.Node         `yaml:"runs-on"`
}

// workflowCommands finds the install and test commands of a repository's
// GitHub Actions workflows: the run-steps of the job that tests Python
// (runs a test command; setup-python and naming break ties), in order. uses-steps are
// skipped; ${{ matrix.python... }} becomes the Python cwm has.
func workflowCommands(repo, python string) (install, test []env.Step, err error) {
	best, err := chooseWorkflowJob(repo, python)
	if best == nil {
		return nil, nil, err
	}
	return best.install, best.tests, nil
}

// workflowPythons lists the Python versions of the matrix of the job
// workflowCommands chooses, and says where they come from.
func workflowPythons(repo string) ([]string, string) {
	best, _ := chooseWorkflowJob(repo, "3")
	if best == nil || len(best.pythons) == 0 {
		return nil, ""
	}
	return sortedVersions(best.pythons), fmt.Sprintf("%s: job %s matrix", best.file, best.job)
}

// workflowJobChoice is a job of a workflow that may be the one testing
// the project.
type workflowJobChoice struct {
	file, job      string
	score          int
	install, tests []env.Step
	pythons        []string // the matrix's values for keys naming a Python
}

func chooseWorkflowJob(repo, python string) (*workflowJobChoice, error) {
	files, _ := filepath.Glob(filepath.Join(repo, ".github", "workflows", "*.y*ml"))
	sort.Strings(files)
	type candidate = workflowJobChoice
	var best *candidate
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		var doc struct {
			Jobs yaml.Node         `yaml:"jobs"`
			On   yaml.Node         `yaml:"on"`
			Env  map[string]string `yaml:"env"`
		}
		if err := yaml.Unmarshal(data, &doc); err != nil {
			// A broken workflow is the repository's problem; the next
			// source of recipes still applies.
			continue
		}
		if doc.Jobs.Kind != yaml.MappingNode {
			continue
		}
		rel, _ := filepath.Rel(repo, f)
		inputs := workflowInputs(&doc.On)
		for i := 0; i+1 < len(doc.Jobs.Content); i += 2 {
			name := doc.Jobs.Content[i].Value
			var job workflowJob
			if err := doc.Jobs.Content[i+1].Decode(&job); err != nil {
				continue
			}
			ctx := exprContext{matrix: collapseMatrix(&job.Strategy.Matrix, python), inputs: inputs, env: map[string]any{}}
			addEnv(ctx.env, doc.Env, ctx, python)
			addEnv(ctx.env, job.Env, ctx, python)
			if !condition(&job.If, ctx, python) || !runsOnLinux(&job.RunsOn, ctx, python) || doctestJob(name) {
				continue
			}
			c := candidate{file: rel, job: name, pythons: matrixPythons(&job.Strategy.Matrix)}
			other, toolchain := false, false
			for si, st := range job.Steps {
				if strings.Contains(st.Uses, "setup-python") {
					c.score += 2
				}
				other = other || st.checksOutOther() || st.downloadsArtifact()
				toolchain = toolchain || st.otherToolchain()
				if st.Run == "" {
					continue
				}
				sctx := ctx
				if len(st.Env) > 0 {
					sctx.env = map[string]any{}
					for k, v := range ctx.env {
						sctx.env[k] = v
					}
					addEnv(sctx.env, st.Env, ctx, python)
				}
				if !condition(&st.If, sctx, python) {
					continue // if: says this step does not run on Linux with this matrix entry
				}
				label := st.Name
				if label == "" {
					label = fmt.Sprintf("#%d", si+1)
				}
				prov := fmt.Sprintf("%s: job %s, step %s", rel, name, label)
				dir := st.WorkingDir
				if dir == "" {
					dir = job.Defaults.Run.WorkingDir
				}
				dir = substituteExpressions(dir, sctx, python)
				var lines []ciLine
				for _, line := range logicalLines(substituteExpressions(st.Run, sctx, python)) {
					lines = append(lines, keepUV(line, repo)...)
				}
				for _, cl := range lines {
					line := cl.line
					if systemInstall().MatchString(line) {
						c.score -= 2 // more than the install step it is counts
					}
					// A cd of its own moves the rest of the step.
					if m := cdLine().FindStringSubmatch(line); m != nil {
						if dir == "" || dir == "." || path.IsAbs(m[1]) {
							dir = m[1]
						} else {
							dir = path.Join(dir, m[1])
						}
						continue
					}
					// tox without -e runs the environments TOXENV names.
					if toxenv := exprString(sctx.env["TOXENV"]); toxenv != "" && toxEnvArg(strings.Fields(line)) == "" && classify(line) == kindTest && runsTox().MatchString(line) {
						line += " -e " + toxenv
					}
					if dir != "" && dir != "." {
						line = "cd " + dir + " && " + line
					}
					kind := classify(line)
					if kind == kindTest && lintTarget(repo, line) {
						kind = kindOther
					}
					switch kind {
					case kindInstall:
						if !hasStep(c.install, line) { // uv run in several steps installs once
							c.install = append(c.install, env.Step{Command: line, Provenance: prov})
						}
					case kindTest:
						c.tests = append(c.tests, env.Step{Command: line, Provenance: prov + cl.note})
					}
				}
			}
			if len(c.tests) > 0 {
				c.score += 3
			}
			if len(c.install) > 0 {
				c.score++
			}
			if len(c.tests) > 0 {
				c.score += nameScore(rel, name)
				if offSchedule(&doc.On) {
					c.score -= 3
				}
				if other {
					c.score -= 3
				}
				if toolchain {
					c.score--
				}
			}
			if len(c.tests) > 0 && c.score >= 3 && (best == nil || c.score > best.score) {
				best = &c
			}
		}
	}
	return best, nil
}

// runsOnLinux says whether a job's runs-on (a label, a list of labels,
// or a group's labels; expressions substituted with the matrix collapsed
// to its Linux entry) can be a Linux runner: a job that runs only on
// Windows or macOS installs and tests what a sandbox cannot run (a
// Windows job's steps are PowerShell or cmd, its packages Windows ones).
func runsOnLinux(n *yaml.Node, ctx exprContext, python string) bool {
	var labels []string
	var walk func(*yaml.Node)
	walk = func(n *yaml.Node) {
		switch n.Kind {
		case yaml.ScalarNode:
			labels = append(labels, strings.ToLower(substituteExpressions(n.Value, ctx, python)))
		case yaml.SequenceNode, yaml.MappingNode:
			for _, c := range n.Content {
				walk(c)
			}
		}
	}
	walk(n)
	other := false
	for _, l := range labels {
		switch {
		case strings.Contains(l, "ubuntu"), strings.Contains(l, "linux"), l == "self-hosted":
			return true
		case strings.Contains(l, "windows"), strings.Contains(l, "macos"), strings.HasPrefix(l, "mac-"):
			other = true
		}
	}
	return !other
}

// matrixPythons lists the values a matrix gives its keys that name a
// Python (python, python-version, py), in its lists and its include
// entries, as written (an unquoted 3.10 is "3.10", not YAML's 3.1).
func matrixPythons(n *yaml.Node) []string {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	var out []string
	add := func(k, v *yaml.Node) {
		lk := strings.ToLower(k.Value)
		if !strings.Contains(lk, "python") && lk != "py" {
			return
		}
		switch v.Kind {
		case yaml.ScalarNode:
			out = append(out, v.Value)
		case yaml.SequenceNode:
			for _, e := range v.Content {
				if e.Kind == yaml.ScalarNode {
					out = append(out, e.Value)
				}
			}
		}
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.Value == "include" && v.Kind == yaml.SequenceNode {
			for _, e := range v.Content {
				for j := 0; e.Kind == yaml.MappingNode && j+1 < len(e.Content); j += 2 {
					add(e.Content[j], e.Content[j+1])
				}
			}
			continue
		}
		add(k, v)
	}
	return out
}

// offTopic names workflows and jobs that test something other than the
// repository at its commit: other projects downstream, nightly
// dependency builds, releases, documentation, benchmarks.
// So do jobs that run the project elsewhere (primer runs of other
// projects, Pyodide or Emscripten builds, docker images), lint it or
// type-check it.
var offTopic = lazyre.New(`(?i)nightly|downstream|flask|lint|integration|publish|release|deploy|docs?\b|bench|memray|profil|wheel|cron|schedule|primer|pyodide|emscripten|wasm|docker|mypy|pyright|typ(e|ing)[-_ ]?check`)

// doctestJob says whether a job runs the doctests alone (dask's ignores
// every test file): not the suite, whatever else it scores.
func doctestJob(name string) bool {
	j := strings.ToLower(name)
	return strings.Contains(j, "doctest") && !strings.Contains(strings.ReplaceAll(j, "doctest", ""), "test")
}

// nameScore prefers a job named for tests (test, tests, pytest, unit),
// then a workflow so named, and passes over off-topic ones.
func nameScore(file, job string) int {
	base := strings.ToLower(filepath.Base(file) + " " + job)
	score := 0
	if j := strings.ToLower(job); strings.Contains(j, "test") || strings.Contains(j, "unit") {
		score += 2
	} else if strings.Contains(base, "test") || strings.Contains(base, "ci") {
		score++
	}
	if offTopic().MatchString(base) {
		score -= 3
	}
	return score
}

// systemInstall matches a line that installs system packages with sudo
// (a job that prepares a machine of its own, as downstream and docker
// jobs do, more than the project's tests need).
var systemInstall = lazyre.New(`(^|\s|&&|;)sudo\s+(-\S+\s+)*(apt|apt-get|dpkg|snap)\s`)

var expression = lazyre.New(`\$\{\{\s*(.*?)\s*\}\}`)

// substituteExpressions evaluates the GitHub expressions in s (ctx has the
// matrix collapsed to one entry whose Python is the environment's). An
// expression cwm cannot evaluate becomes the environment's Python when it
// mentions python, and nothing otherwise.
func substituteExpressions(s string, ctx exprContext, python string) string {
	return expression().ReplaceAllStringFunc(s, func(m string) string {
		inner := expression().FindStringSubmatch(m)[1]
		v, err := evalExpression(inner, ctx)
		if err != nil {
			if strings.Contains(inner, "python") {
				return python
			}
			return ""
		}
		return exprString(v)
	})
}

// condition evaluates a job's or step's if: (with or without ${{ }});
// one cwm cannot evaluate counts as true.
func condition(n *yaml.Node, ctx exprContext, python string) bool {
	if n == nil || n.Kind != yaml.ScalarNode || strings.TrimSpace(n.Value) == "" {
		return true
	}
	src := strings.TrimSpace(n.Value)
	if m := expression().FindStringSubmatch(src); m != nil && strings.HasPrefix(src, "${{") && strings.HasSuffix(src, "}}") {
		src = m[1]
	}
	v, err := evalExpression(src, ctx)
	if err != nil {
		return true
	}
	return truthy(v)
}

// addEnv evaluates env: values into dst.
func addEnv(dst map[string]any, src map[string]string, ctx exprContext, python string) {
	for k, v := range src {
		dst[k] = substituteExpressions(v, ctx, python)
	}
}

// workflowInputs are the defaults of a workflow's workflow_dispatch and
// workflow_call inputs.
// offSchedule reports whether a workflow runs only on a schedule or by
// hand (schedule, workflow_dispatch): a weekly run against the
// development versions of other projects (networkx's weekly-dispatch,
// scrapy's tests-vcs-deps, whose steps install from git), not the tests
// every change passes.
func offSchedule(on *yaml.Node) bool {
	var events []string
	switch on.Kind {
	case yaml.ScalarNode:
		events = []string{on.Value}
	case yaml.SequenceNode:
		for _, n := range on.Content {
			events = append(events, n.Value)
		}
	case yaml.MappingNode:
		for i := 0; i < len(on.Content); i += 2 {
			events = append(events, on.Content[i].Value)
		}
	}
	for _, ev := range events {
		if ev != "schedule" && ev != "workflow_dispatch" {
			return false
		}
	}
	return len(events) > 0
}

func workflowInputs(on *yaml.Node) map[string]any {
	out := map[string]any{}
	if on == nil || on.Kind != yaml.MappingNode {
		return out
	}
	for i := 0; i+1 < len(on.Content); i += 2 {
		if ev := on.Content[i].Value; ev != "workflow_dispatch" && ev != "workflow_call" {
			continue
		}
		var trig struct {
			Inputs map[string]struct {
				Default any `yaml:"default"`
			} `yaml:"inputs"`
		}
		if on.Content[i+1].Decode(&trig) != nil {
			continue
		}
		for k, in := range trig.Inputs {
			if _, ok := out[k]; !ok {
				out[k] = in.Default
			}
		}
	}
	return out
}

// collapseMatrix picks the one matrix entry cwm replays, as CWM's Activ
// does: the combinations of the matrix's lists, minus exclude, with
// include applied, then the one that runs the environment's Python on
// Linux (first in order on a tie). Keys naming a Python are set to the
// environment's.
func collapseMatrix(n *yaml.Node, python string) map[string]any {
	var m map[string]any
	if n == nil || n.Kind != yaml.MappingNode || n.Decode(&m) != nil {
		return map[string]any{}
	}
	combos := []map[string]any{{}}
	var keys []string
	for k := range m {
		if k != "include" && k != "exclude" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	base := map[string]bool{}
	for _, k := range keys {
		list, ok := m[k].([]any)
		if !ok {
			continue // an expression (fromJSON(...)): nothing to expand
		}
		base[k] = true
		var next []map[string]any
		for _, c := range combos {
			for _, v := range list {
				if len(next) >= 256 {
					break
				}
				d := map[string]any{k: v}
				for ck, cv := range c {
					d[ck] = cv
				}
				next = append(next, d)
			}
		}
		combos = next
	}
	if len(base) == 0 {
		combos = nil
	}
	if ex, ok := m["exclude"].([]any); ok {
		var kept []map[string]any
		for _, c := range combos {
			drop := false
			for _, e := range ex {
				if em, ok := e.(map[string]any); ok && matches(c, em) {
					drop = true
				}
			}
			if !drop {
				kept = append(kept, c)
			}
		}
		combos = kept
	}
	if inc, ok := m["include"].([]any); ok {
		// An include entry extends every original combination whose
		// matrix values it does not change; one that extends none is a
		// combination of its own.
		orig := combos
		combos = append([]map[string]any{}, orig...)
		for _, e := range inc {
			em, ok := e.(map[string]any)
			if !ok {
				continue
			}
			hit := false
			for _, c := range orig {
				if matchesOn(c, em, base) {
					hit = true
					for k, v := range em {
						if !base[k] {
							c[k] = v
						}
					}
				}
			}
			if !hit {
				d := map[string]any{}
				for k, v := range em {
					d[k] = v
				}
				combos = append(combos, d)
			}
		}
	}
	best, bestScore := map[string]any{}, -1
	for _, c := range combos {
		score := 0
		for k, v := range c {
			lk := strings.ToLower(k)
			switch {
			case strings.Contains(lk, "python") && exprString(v) == python:
				score += 4
			case lk == "os" || strings.Contains(lk, "platform") || strings.Contains(lk, "runs-on"):
				if s := strings.ToLower(exprString(v)); !strings.Contains(s, "ubuntu") && !strings.Contains(s, "linux") {
					score -= 8
				}
			default:
				// An entry for benchmarks, docs or linting is not the
				// test suite's.
				if s := exprString(v); notTestEnv().MatchString(s) || offTopic().MatchString(s) || strings.Contains(strings.ToLower(s), "bench") {
					score -= 2
				}
			}
		}
		if score > bestScore {
			best, bestScore = c, score
		}
	}
	for k := range best {
		if strings.Contains(strings.ToLower(k), "python") {
			best[k] = python
		}
	}
	return best
}

// matches reports whether every key of e has the same value in c.
func matches(c, e map[string]any) bool {
	for k, v := range e {
		if exprString(c[k]) != exprString(v) {
			return false
		}
	}
	return true
}

// matchesOn is matches restricted to the matrix's own keys (GitHub's rule
// for whether an include entry extends a combination).
func matchesOn(c, e map[string]any, base map[string]bool) bool {
	for k, v := range e {
		if base[k] && exprString(c[k]) != exprString(v) {
			return false
		}
	}
	return true
}

// logicalLines splits a run block into commands: backslash continuations
// are joined, blank lines and comments dropped.
func logicalLines(block string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(block, "\n") {
		t := strings.TrimSpace(line)
		if strings.HasSuffix(t, "\\") {
			cur.WriteString(strings.TrimSpace(strings.TrimSuffix(t, "\\")))
			cur.WriteByte(' ')
			continue
		}
		cur.WriteString(t)
		if s := strings.TrimSpace(cur.String()); s != "" && !strings.HasPrefix(s, "#") {
			out = append(out, s)
		}
		cur.Reset()
	}
	return out
}

type lineKind int

const (
	kindOther lineKind = iota
	kindInstall
	kindTest
)

var (
	installRE = lazyre.New(`(^|[\s/])(pip3?(\.\d+)?|uv pip|pipenv|poetry|pdm|conda|mamba|apt-get|apt|brew)\s+(install|sync)\b|setup\.py\s+(develop|install)\b|(^|\s)uv sync\b`)
	testRE    = lazyre.New(`(^|[\s/])(pytest|py\.test)(\s|$)|-m\s*(pytest|unittest)\b|(^|\s)(tox|nox)(\s|$)|(^|\s)make\s+(test|check)\b|setup\.py\s+test\b|(^|\s)coverage\s+run\b`)
)

// cdLine is a run line that only changes directory.
var cdLine = lazyre.New(`^cd\s+([^\s;&|]+)\s*$`)

// toolInstall matches commands that install a program for the CI runner's
// own use (uv tool install tox, pipx install nox).
var toolInstall = lazyre.New(`(^|\s)(uv tool|pipx) (install|upgrade)\b|(^|\s)uv python install\b`)

// runsTox matches a command line that runs tox.
var runsTox = lazyre.New(`(^|\s)tox(\s|$)`)

// runsPytest matches a line that runs pytest or unittest itself.
var runsPytest = lazyre.New(`(^|\s)(pytest|py\.test)(\s|$)|-m\s*(pytest|unittest)\b`)

// notTestEnv names tox environments and nox sessions that build, lint or
// type-check rather than test.
var notTestEnv = lazyre.New(`(?i)^(docs?|docs?-?lint|lint-?docs?|linkcheck|doctests?|build-?docs|docs-?build|lint|style|typing|types|mypy|pyright|pre-commit|precommit|format|fmt|build|release|publish|dist|check-?manifest|coverage-report|report|clean|spell|readme|pkg|package|flake8|ruff|pylint|black|isort)$`)

// typeCheckFactor names the tox factors of a type-checking environment
// (py311-mypy), which runs pytest only to collect its plugin's items.
var typeCheckFactor = lazyre.New(`(?i)^(typing|types|mypy|pyright|pytype)$`)

// typeChecks reports whether a tox environment name has a type checker
// among its factors.
func typeChecks(name string) bool {
	for _, f := range strings.Split(name, "-") {
		if typeCheckFactor().MatchString(f) {
			return true
		}
	}
	return false
}

// classify says whether a command line installs or tests. tox and nox
// count as tests unless the environment or session they run is a
// documentation, lint or packaging one.
func classify(line string) lineKind {
	switch {
	case installRE().MatchString(line):
		return kindInstall
	case toolInstall().MatchString(line):
		return kindOther // installs a runner (tox, nox) for itself, not the project
	case testRE().MatchString(line):
		words := strings.Fields(line)
		if name := toxEnvArg(words); name != "" && (notTestEnv().MatchString(name) && !runsPytest().MatchString(line) || typeChecks(name)) {
			return kindOther
		}
		if containsWord(words, "--notest") || containsWord(words, "--no-test") {
			return kindOther // tox preparing its environments only
		}
		if name := noxSessionArg(words); name != "" && notTestEnv().MatchString(name) {
			return kindOther
		}
		return kindTest
	}
	return kindOther
}

// lintTarget reports whether line is "make check" (or another target not
// named test) whose recipe in the repository's Makefile runs no test
// command: pycparser's check target lints and type-checks.
func lintTarget(repo, line string) bool {
	words := strings.Fields(line)
	for i := 0; i+1 < len(words); i++ {
		if words[i] == "make" && !strings.HasPrefix(words[i+1], "test") {
			m, ok := makeTarget(repo, words[i+1])
			return ok && m.Command == "make "+words[i+1]
		}
	}
	return false
}

// noxSessionArg is the first session a nox command line names with -s,
// --session or --sessions, "" when none.
func noxSessionArg(words []string) string {
	for i, w := range words {
		if (w == "-s" || w == "--session" || w == "--sessions") && i+1 < len(words) {
			return strings.Trim(words[i+1], `'"`)
		}
		if v, ok := strings.CutPrefix(w, "--session="); ok {
			return strings.Trim(v, `'"`)
		}
	}
	return ""
}
