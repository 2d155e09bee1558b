package cli

// What commands share to write their results: shared here, not in one
// command's file, so that no command file reaches into another's.

import (
	"encoding/json"
	"io"

	"cwm/internal/command"
)

// progressTo is where a command's progress goes: stderr, unless quiet.
func progressTo(e *command.Env, quiet bool) io.Writer {
	if quiet {
		return nil
	}
	return e.Stderr
}

// writeJSON prints v as indented JSON (the --json of every command).
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
