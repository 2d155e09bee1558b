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
	json bool
}

func (*envLsCmd) Name() string     { return "env ls" }
func (*envLsCmd) Synopsis() string { return "list the built environments" }
func (*envLsCmd) Usage() string {
	return `[--json]
Lists the environments in $CWM_HOME/envs, oldest first: id, name, whether
it is usable, its baseline (tests passing in every run / all tests, flaky
ones), Python, layer size, and the repository. Builds in progress and
leftovers of interrupted builds are not listed (env gc removes them).`
}

func (c *envLsCmd) Flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.json, "json", false, "print the manifests as a JSON array")
}

func (c *envLsCmd) Run(ctx context.Context, e *command.Env, args []string) error {
	if len(args) > 0 {
		return command.Usagef("env ls takes no arguments")
	}
	envs, err := env.NewStore(e.Home).List()
	if err != nil {
		return err
	}
	if c.json {
		if envs == nil {
			envs = []*env.Env{}
		}
		return writeJSON(e.Stdout, envs)
	}
	if len(envs) == 0 {
		fmt.Fprintln(e.Stderr, "no environments (build one with cwm env build PATH)")
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
