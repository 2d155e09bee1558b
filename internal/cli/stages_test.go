package cli

import (
	"flag"
	"io"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Every command with --shard is a batch stage cwm merge knows, under the
// command's name (its shards' markers record the stage's name), and every
// stage is a command's.
func TestBatchStagesAreCommands(t *testing.T) {
	var sharded []string
	for _, mk := range Program.Commands {
		c := mk()
		fs := flag.NewFlagSet(c.Name(), flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c.Flags(fs)
		if fs.Lookup("shard") != nil {
			sharded = append(sharded, c.Name())
		}
	}
	var stages []string
	for _, s := range batchStages() {
		stages = append(stages, s.Name)
		if s.LineKey == nil {
			t.Errorf("stage %q has no LineKey", s.Name)
		}
	}
	sort.Strings(sharded)
	sort.Strings(stages)
	if diff := cmp.Diff(sharded, stages); diff != "" {
		t.Errorf("commands with --shard (-) against cwm merge's stages (+):\n%s", diff)
	}
}
