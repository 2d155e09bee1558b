package envbuild

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"cwm/internal/env"

	// The YAML parser: CI workflows are YAML with anchors, block scalars
	// and flow sequences, which only a real parser reads correctly.
	"gopkg.in/yaml.v3"
)

type workflowStep struct {
	Name       string `yaml:"name"`
	Uses       string `yaml:"uses"`
	Run        string `yaml:"run"`
	WorkingDir string `yaml:"working-directory"`
}

type workflowJob struct {
	Steps    []workflowStep `yaml:"steps"`
	Defaults struct {
		Run struct {
			WorkingDir string `yaml:"working-directory"`
		} `yaml:"run"`
	} `yaml:"defaults"`
}

// workflowCommands finds the install and test commands of a repository's
// GitHub Actions workflows: the run-steps of the job that tests Python
// (uses setup-python or runs a test command), in order. uses-steps are
// skipped; ${{ matrix.python... }} becomes the Python cwm has.
func workflowCommands(repo, python string) (install, test []env.Step, err error) {
	files, _ := filepath.Glob(filepath.Join(repo, ".github", "workflows", "*.y*ml"))
	sort.Strings(files)
	type candidate struct {
		file, job      string
		score          int
		install, tests []env.Step
	}
	var best *candidate
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		var doc struct {
			Jobs yaml.Node `yaml:"jobs"`
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
		for i := 0; i+1 < len(doc.Jobs.Content); i += 2 {
			name := doc.Jobs.Content[i].Value
			var job workflowJob
			if err := doc.Jobs.Content[i+1].Decode(&job); err != nil {
				continue
			}
			c := candidate{file: rel, job: name}
			for si, st := range job.Steps {
				if strings.Contains(st.Uses, "setup-python") {
					c.score += 2
				}
				if st.Run == "" {
					continue
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
				for _, line := range logicalLines(substituteExpressions(st.Run, python)) {
					if dir != "" && dir != "." {
						line = "cd " + dir + " && " + line
					}
					switch classify(line) {
					case kindInstall:
						c.install = append(c.install, env.Step{Command: line, Provenance: prov})
					case kindTest:
						c.tests = append(c.tests, env.Step{Command: line, Provenance: prov})
					}
				}
			}
			if len(c.tests) > 0 {
				c.score += 3
			}
			if len(c.install) > 0 {
				c.score++
			}
			if c.score >= 3 && (best == nil || c.score > best.score) {
				best = &c
			}
		}
	}
	if best == nil {
		return nil, nil, nil
	}
	return best.install, best.tests, nil
}

var expression = regexp.MustCompile(`\$\{\{\s*([^}]*?)\s*\}\}`)

// substituteExpressions replaces GitHub expressions: the matrix's Python
// version by the one available, anything else by nothing.
func substituteExpressions(s, python string) string {
	return expression.ReplaceAllStringFunc(s, func(m string) string {
		inner := expression.FindStringSubmatch(m)[1]
		if strings.Contains(inner, "python") {
			return python
		}
		return ""
	})
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
	installRE = regexp.MustCompile(`(^|[\s/])(pip3?(\.\d+)?|uv pip|pipenv|poetry|pdm|conda|mamba|apt-get|apt|brew)\s+(install|sync)\b|setup\.py\s+(develop|install)\b|(^|\s)uv sync\b`)
	testRE    = regexp.MustCompile(`(^|[\s/])(pytest|py\.test)(\s|$)|-m\s*(pytest|unittest)\b|(^|\s)(tox|nox)(\s|$)|(^|\s)make\s+(test|check)\b|setup\.py\s+test\b|(^|\s)coverage\s+run\b`)
)

// classify says whether a command line installs or tests.
func classify(line string) lineKind {
	switch {
	case installRE.MatchString(line):
		return kindInstall
	case testRE.MatchString(line):
		return kindTest
	}
	return kindOther
}
