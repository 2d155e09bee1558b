package command

import (
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
)

// runHelp is 'cwm help [COMMAND]'.
func (p *Program) runHelp(stdout, stderr io.Writer, args []string) int {
	if len(args) == 0 {
		p.printHelp(stdout)
		return 0
	}
	cmd, rest := p.lookup(args)
	if cmd == nil || len(rest) > 0 {
		if group := p.group(args[0]); len(group) > 0 && len(args) == 1 {
			printGroupHelp(stdout, args[0], group)
			return 0
		}
		fmt.Fprintf(stderr, "cwm help: unknown command %q\n", strings.Join(args, " "))
		return 2
	}
	printCommandHelp(stdout, cmd, flagSet(cmd))
	return 0
}

// printHelp prints the main help: Help, every command sorted by name, Footer.
func (p *Program) printHelp(w io.Writer) {
	fmt.Fprint(w, p.Help)
	var cs []Command
	for _, mk := range p.Commands {
		cs = append(cs, mk())
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].Name() < cs[j].Name() })
	printCommandList(w, cs)
	fmt.Fprint(w, p.Footer)
}

func printGroupHelp(w io.Writer, group string, cs []Command) {
	fmt.Fprintf(w, "Usage:\n  cwm %s COMMAND [flags] [arguments]\n\nCommands:\n", group)
	printCommandList(w, cs)
	fmt.Fprintf(w, "\nRun 'cwm help %s COMMAND' for a command's flags.\n", group)
}

func printCommandList(w io.Writer, cs []Command) {
	width := 0
	for _, c := range cs {
		width = max(width, len(c.Name()))
	}
	for _, c := range cs {
		fmt.Fprintf(w, "  %-*s  %s\n", width, c.Name(), c.Synopsis())
	}
}

func printCommandHelp(w io.Writer, cmd Command, fs *flag.FlagSet) {
	u := strings.TrimSpace(cmd.Usage())
	first, rest, _ := strings.Cut(u, "\n")
	fmt.Fprintf(w, "Usage: cwm %s %s\n\n%s\n", cmd.Name(), first, cmd.Synopsis())
	if rest = strings.TrimSpace(rest); rest != "" {
		fmt.Fprintf(w, "\n%s\n", rest)
	}
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	if n > 0 {
		fmt.Fprintf(w, "\nFlags:\n")
		fs.SetOutput(w)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
}
