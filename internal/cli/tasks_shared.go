package cli

import (
	"strings"

	"cwm/internal/tasks"
)

// exclusions reads --exclude-repos: empty for the SWE-bench list cwm
// ships, "none" for no decontamination, else a file.
func exclusions(flagValue string) (*tasks.Exclusions, error) {
	switch flagValue {
	case "":
		return tasks.DefaultExclusions(), nil
	case "none":
		return nil, nil
	}
	return tasks.LoadExclusions(flagValue)
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
