package cli

import (
	"context"
	"strings"

	"cwm/internal/command"
	"cwm/internal/envbuild"
	"cwm/internal/sandbox"
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

// openTaskSource opens what the task makers start from: the exclusions
// of --exclude-repos, the environment and a sandbox runtime (the caller
// closes it).
func openTaskSource(ctx context.Context, e *command.Env, envRef, excludeRepos string) (*tasks.Exclusions, *envbuild.Env, *sandbox.Runtime, error) {
	excl, err := exclusions(ctx, excludeRepos)
	if err != nil {
		return nil, nil, nil, err
	}
	env, err := resolveEnv(e, envRef)
	if err != nil {
		return nil, nil, nil, err
	}
	rt, err := newRuntime(e)
	if err != nil {
		return nil, nil, nil, err
	}
	return excl, env, rt, nil
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
