package cli

import (
	"context"
	"strings"

	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/tasks"
)

// exclusions reads --exclude-repos: empty for the SWE-bench list cwm
// ships, "none" for no decontamination, else a file.
func exclusions(ctx context.Context, flagValue string) (*tasks.Exclusions, error) {
	switch flagValue {
	case "":
		return tasks.DefaultExclusions(), nil
	case "none":
		return nil, nil
	}
	return tasks.LoadExclusions(ctx, flagValue)
}

// taskSource is what the task makers start from: the exclusions of
// --exclude-repos, the environment and sandboxes (close releases them).
type taskSource struct {
	excl  *tasks.Exclusions
	env   *env.Env
	sbs   *env.Sandboxes
	close func()
}

func openTaskSource(ctx context.Context, e *command.Env, envRef, excludeRepos string) (*taskSource, error) {
	excl, err := exclusions(ctx, excludeRepos)
	if err != nil {
		return nil, err
	}
	en, err := resolveEnv(ctx, e, envRef)
	if err != nil {
		return nil, err
	}
	sbs, closeRT, err := openSandboxes(e, -1)
	if err != nil {
		return nil, err
	}
	return &taskSource{excl: excl, env: en, sbs: sbs, close: closeRT}, nil
}

// splitList splits a comma-separated flag value, dropping empty items.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
