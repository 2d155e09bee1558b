package cli

import (
	"context"
	"flag"
	"fmt"
	"text/tabwriter"

	"cwm/internal/command"
	"cwm/internal/env"
)

type envLsCmd struct {
	json, all bool
}

func (*envLsCmd) Name() string     { return "env ls" }
func (*envLsCmd) Synopsis() string { return "list the built environments" }
func (*envLsCmd) Usage() string {
	return `[--all] [--json]
Lists the usable environments in $CWM_HOME/envs, oldest first: id, name,
its baseline (tests passing in every run / all tests, flaky ones), Python,
layer size, and the repository. Unusable builds are counted, not listed,
unless --all is given (env gc removes them). Builds in progress and
leftovers of interrupted builds are never listed.`
}

func (c *envLsCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the manifests as a JSON array")
	fs.BoolVar(&c.all, "all", false, "list unusable builds too")
}

func (c *envLsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("env ls takes no arguments")
	}
	envs, err := env.NewStore(e.Home).List()
	if err != nil {
		return err
	}
	hidden := 0
	if !c.all {
		var kept []*env.Env
		for _, en := range envs {
			if en.Usable {
				kept = append(kept, en)
			} else {
				hidden++
			}
		}
		envs = kept
	}
	defer func() {
		if hidden > 0 {
			fmt.Fprintf(e.Stderr, "%d unusable build(s) not listed (env ls --all lists them, env gc removes them)\n", hidden)
		}
	}()
	if c.json {
		if envs == nil {
			envs = []*env.Env{}
		}
		return writeJSON(e.Stdout, envs)
	}
	if len(envs) == 0 {
		fmt.Fprintln(e.Stderr, "no usable environments (build one with cwm env build PATH)")
		return nil
	}
	tw := tabwriter.NewWriter(e.Stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tNAME\tUSABLE\tPASS/TESTS\tFLAKY\tPYTHON\tSIZE\tBUILT\tREPOSITORY")
	for _, en := range envs {
		usable := "yes"
		if !en.Usable {
			usable = "no"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d/%d\t%d\t%s\t%s\t%s\t%s\n", shortID(en.ID), en.Name, usable,
			en.Counts.Pass, en.Counts.Tests, en.Counts.Flaky, en.Python, humanBytes(en.LayerBytes),
			en.BuiltAt.Local().Format("2006-01-02 15:04"), en.Repository.Location)
	}
	return tw.Flush()
}
