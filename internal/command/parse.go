package command

import (
	"flag"
	"strings"
)

// Verbatim is implemented by a command whose arguments from the first
// positional one on belong to another program (sandbox run's CMD ARG...):
// its flags end there, as they end at "--", and a flag after the command
// is the command's, not cwm's.
type Verbatim interface {
	Verbatim()
}

// parseArgs parses cmd's flags from args and returns the positional
// arguments. Flags may come anywhere among them ("report FILE --out X"),
// which flag.FlagSet alone stops at; "--" ends them, and everything after
// it is positional even when it starts with "-". A Verbatim command's
// flags end at its first positional argument.
func parseArgs(fs *flag.FlagSet, cmd Command, args []string) ([]string, error) {
	if _, ok := cmd.(Verbatim); ok {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		return fs.Args(), nil
	}
	var pos []string
	for len(args) > 0 {
		a := args[0]
		switch {
		case a == "--":
			return append(pos, args[1:]...), nil
		case strings.HasPrefix(a, "-") && a != "-":
			if err := fs.Parse(args); err != nil {
				return nil, err
			}
			rest := fs.Args()
			if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
				// Parse stopped at a "--" it consumed after the flags.
				return append(pos, rest...), nil
			}
			args = rest
		default:
			pos = append(pos, a)
			args = args[1:]
		}
	}
	return pos, nil
}
