package envbuild

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"cwm/internal/env"
)

// HistoryOutcome is how one commit of a history walk went.
type HistoryOutcome struct {
	// Commit is the commit tried; Index its distance from the head
	// (0: the head itself) along first parents.
	Commit string `json:"commit"`
	Index  int    `json:"index"`
	// EnvID is the environment built for it ("" when the build itself
	// failed: Error says why).
	EnvID  string `json:"env_id,omitempty"`
	Usable bool   `json:"usable"`
	// Recipe is "head" when the head's recipe worked, "detected" when it
	// did not and the commit's own detection did.
	Recipe string `json:"recipe,omitempty"`
	Reason string `json:"reason,omitempty"`
	Error  string `json:"error,omitempty"`
	// Kept says the environment is one of the at most keep usable ones.
	Kept bool `json:"kept"`
}

// BuildHistory builds environments for older commits of head's repository,
// as CWM traced repositories at several points of their history: it walks
// head's first-parent history (head included, at most tries commits),
// aims at keep usable environments spread evenly over it, and for each
// commit it tries builds with head's recipe, then with the commit's own
// detected recipe when that is not usable. A commit that gives no usable
// environment is followed by the next older one, up to the next target.
// opts is head's build (store, runs, limits, progress); its source, revision
// and recipe fields are set per commit.
func BuildHistory(ctx context.Context, sbs *env.Sandboxes, head *env.Env, opts Options, tries, keep int) ([]HistoryOutcome, error) {
	if tries < 1 || keep < 1 {
		return nil, inputErrorf("--history and --keep must be at least 1")
	}
	if head.Repository.Kind != "git" {
		return nil, inputErrorf("--history needs a git repository, not a plain directory")
	}
	hist, err := env.OpenHistory(ctx, head)
	if err != nil {
		return nil, err
	}
	out, err := hist.Git(ctx, "rev-list", "--first-parent", "-n", strconv.Itoa(tries), head.Commit)
	hist.Close()
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", head.Name, err)
	}
	commits := strings.Fields(out)
	var install []string
	for _, st := range head.Install[1:] { // the first step is the venv
		install = append(install, st.Command)
	}
	say := opts.Progress
	var outcomes []HistoryOutcome
	kept := 0
	// Targets are evenly spread indices; the head is the first.
	for t := 0; t < keep && kept < keep; t++ {
		from, to := t*len(commits)/keep, (t+1)*len(commits)/keep
		for i := from; i < to; i++ {
			o := HistoryOutcome{Commit: commits[i], Index: i}
			e := head
			if i > 0 {
				if say != nil {
					fmt.Fprintf(say, "history: %d/%d: %s\n", i+1, len(commits), short(commits[i]))
				}
				e, o.Recipe, err = buildAt(ctx, sbs, opts, head, commits[i], install)
				if err != nil {
					if ctx.Err() != nil {
						return outcomes, ctx.Err()
					}
					o.Error = err.Error()
				}
			} else {
				o.Recipe = "head"
			}
			if e != nil {
				o.EnvID, o.Usable, o.Reason = e.ID, e.Usable, e.Reason
			}
			if o.Usable {
				o.Kept = true
				kept++
			}
			outcomes = append(outcomes, o)
			if o.Usable {
				break
			}
		}
	}
	return outcomes, nil
}

// buildAt builds commit with head's recipe and, when that is not usable,
// with the commit's own detection.
func buildAt(ctx context.Context, sbs *env.Sandboxes, opts Options, head *env.Env, commit string, install []string) (*env.Env, string, error) {
	opts.Source, opts.Rev, opts.Name = head.Repository.Location, commit, RevisionName(head.Name, commit)
	opts.Install, opts.Test, opts.RecipeFrom = install, head.Test.Command, "recipe of "+short(head.Commit)
	if len(install) == 0 {
		// An empty --install means detection; the head installed nothing
		// beyond the venv, so neither does this build.
		opts.Install = []string{"true"}
	}
	e, err := Build(ctx, sbs, opts)
	if err == nil && e.Usable {
		return e, "head", nil
	}
	opts.Install, opts.Test, opts.RecipeFrom = nil, "", ""
	e2, err2 := Build(ctx, sbs, opts)
	if err2 != nil {
		if e != nil {
			return e, "head", nil
		}
		return nil, "", err2
	}
	return e2, "detected", nil
}
