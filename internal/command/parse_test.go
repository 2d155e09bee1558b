package command

import (
	"context"
	"flag"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type parseCmd struct {
	out  string
	json bool
}

func (*parseCmd) Name() string     { return "parse" }
func (*parseCmd) Synopsis() string { return "" }
func (*parseCmd) Usage() string    { return "" }
func (c *parseCmd) Flags(fs *flag.FlagSet) {
	fs.StringVar(&c.out, "out", "", "")
	fs.BoolVar(&c.json, "json", false, "")
}
func (*parseCmd) Run(context.Context, *Env, []string) error { return nil }

type verbatimCmd struct{ parseCmd }

func (*verbatimCmd) Verbatim() {}

// Flags may come anywhere among the arguments; "--" ends them; a Verbatim
// command's end at its first argument.
func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args     []string
		verbatim bool
		pos      []string
		out      string
		json     bool
	}{
		{args: []string{"a", "--out", "x", "b"}, pos: []string{"a", "b"}, out: "x"},
		{args: []string{"--json", "a", "--out=x"}, pos: []string{"a"}, out: "x", json: true},
		{args: []string{"a", "--", "--json", "-"}, pos: []string{"a", "--json", "-"}},
		{args: []string{"--json", "--", "-x", "--out"}, pos: []string{"-x", "--out"}, json: true},
		{args: []string{"-", "b"}, pos: []string{"-", "b"}},
		{args: []string{"--json", "cmd", "--out", "x"}, verbatim: true, pos: []string{"cmd", "--out", "x"}, json: true},
		{args: []string{"--", "cmd", "--json"}, verbatim: true, pos: []string{"cmd", "--json"}},
	} {
		var cmd Command = &parseCmd{}
		if tc.verbatim {
			cmd = &verbatimCmd{}
		}
		fs := flagSet(cmd)
		pos, err := parseArgs(fs, cmd, tc.args)
		if err != nil {
			t.Errorf("parseArgs(%q) = %v", tc.args, err)
			continue
		}
		var got parseCmd
		switch c := cmd.(type) {
		case *parseCmd:
			got = *c
		case *verbatimCmd:
			got = c.parseCmd
		}
		if diff := cmp.Diff(tc.pos, pos); diff != "" || got.out != tc.out || got.json != tc.json {
			t.Errorf("parseArgs(%q, verbatim %v) = %q, --out %q, --json %v; want %q, %q, %v",
				tc.args, tc.verbatim, pos, got.out, got.json, tc.pos, tc.out, tc.json)
		}
	}
	if _, err := parseArgs(flagSet(&parseCmd{}), &parseCmd{}, []string{"a", "--nope"}); err == nil {
		t.Errorf("parseArgs with an unknown flag after an argument: no error")
	}
}
