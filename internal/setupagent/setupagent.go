// Package setupagent is CWM's RepoAgent: a model that sets a repository up
// when no detected recipe does. It runs on the forage machinery (package
// agent: the same tools, protocols, limits and trajectory schema) in a
// sandbox on the repository's environment, reads the files it chooses,
// runs commands, and ends by submitting a JSON file with the install steps
// and the test command it proposes. cwm then builds the environment with
// that recipe itself (provenance "agent") and keeps it only when its
// baseline has passing tests; the agent's trajectory is data too.
package setupagent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/task"
	"cwm/internal/trajectory"
)

// Proposal is the recipe the agent submits.
type Proposal struct {
	// Install are shell commands run in order in /repo, offline, with the
	// environment's venv (/venv) first on PATH.
	Install []string `json:"install"`
	// Test runs the test suite from /repo.
	Test string `json:"test"`
}

// Instructions is the setup task given to the agent in place of an issue.
const Instructions = `Set up this Python repository so that its test suite runs, and propose the recipe.

The repository is checked out in /repo. There is no network: packages can only come from what is installed on the system (the Debian python3-* packages) and from the repository itself; pip must be run as "python -m pip install --no-index --no-build-isolation ...". A virtual environment that sees the system's packages is at /venv (first on PATH).

Read what you need (README, CONTRIBUTING, CI workflows, tox.ini, noxfile.py, pyproject.toml, setup.cfg, Makefile), try commands, and find the install steps and the test command that run the most tests. Then write the recipe to /repo/` + RecipeFile + ` as JSON of the form
{"install": ["first install command", "..."], "test": "the test command"}
(commands run from /repo, one shell line each; prefer "python -m pytest ..." or "python -m unittest ..."), make it a patch with
git -C /repo add -N ` + RecipeFile + ` && git -C /repo diff -- ` + RecipeFile + ` > /tmp/setup.patch
and submit /tmp/setup.patch.`

// RecipeFile is the file whose creation the agent submits as a patch.
const RecipeFile = "cwm-setup.json"

// SetupPrefix starts the task id of every setup trajectory: "setup/NAME".
const SetupPrefix = "setup/"

// Run runs the setup agent with r on e, an environment whose /repo is the
// repository (any build of it, usable or not), and returns the recipe it
// proposed with its trajectory. The trajectory is returned whenever the
// episode ran, also with an error saying why it proposed nothing usable.
func Run(ctx context.Context, r *agent.Runner, e *env.Env, name string) (*Proposal, *trajectory.Trajectory, error) {
	t := &task.Task{InstanceID: SetupPrefix + name, Repo: name, ProblemStatement: Instructions, EnvID: e.ID}
	tr, err := r.Run(ctx, agent.Attempt{Task: t, Env: e})
	if err != nil {
		return nil, nil, fmt.Errorf("setup agent: %w", err)
	}
	if tr.SubmittedPatch == nil {
		why := string(tr.ExitReason)
		if tr.Error != "" {
			why += ": " + tr.Error
		}
		return nil, tr, fmt.Errorf("the setup agent proposed no recipe (%s after %d turns)", why, tr.Turns)
	}
	p, err := Parse(*tr.SubmittedPatch)
	return p, tr, err
}

// Parse reads a submitted recipe: a patch that creates RecipeFile (or the
// JSON itself) with a non-empty test command and install commands of one
// line each.
func Parse(text string) (*Proposal, error) {
	if strings.HasPrefix(text, "diff --git") || strings.HasPrefix(text, "--- ") {
		text = addedContent(text, RecipeFile)
	}
	var p Proposal
	dec := json.NewDecoder(strings.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("the setup agent's recipe is not {\"install\": [...], \"test\": \"...\"}: %v", err)
	}
	p.Test = strings.TrimSpace(p.Test)
	if p.Test == "" {
		return nil, fmt.Errorf("the setup agent's recipe has no test command")
	}
	var install []string
	for _, c := range p.Install {
		c = strings.TrimSpace(c)
		switch {
		case c == "":
			continue
		case strings.Contains(c, "\n") || strings.Contains(p.Test, "\n"):
			return nil, fmt.Errorf("the setup agent's recipe has a command of several lines: %q", c)
		}
		install = append(install, c)
	}
	p.Install = install
	return &p, nil
}

// addedContent is the content a unified diff gives file: its added
// lines ("+..." in the hunks of the file's section).
func addedContent(diff, file string) string {
	var b strings.Builder
	in := false
	for _, line := range strings.Split(diff, "\n") {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			in = strings.HasSuffix(line, "/"+file)
		case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
		case in && strings.HasPrefix(line, "+"):
			b.WriteString(line[1:])
			b.WriteByte('\n')
		}
	}
	return b.String()
}
