package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"cwm/internal/shard"
)

// Marker says that one shard's run of a stage got to its end: every item
// of the shard has its result in the output (a result may be a failure the
// stage records). It is written next to the output, OUT.shard.json, and
// only by sharded runs (n > 1), which are the ones merged.
//
// A run removes the marker when it starts and writes it when it ends, so
// a shard whose run was killed, or ended with an error, has none: that is
// how cwm merge knows which shard to run again.
type Marker struct {
	Stage string `json:"stage"` // the command: "trace func"
	Shard string `json:"shard"` // i/n
	// Inputs are the stage's input files (absolute paths), from which cwm
	// merge lists the missing items when it can.
	Inputs []string `json:"inputs,omitempty"`
	// Params are the options that decide the items besides the inputs
	// (forage's samples).
	Params map[string]string `json:"params,omitempty"`
	// Items is how many items the shard had.
	Items    int       `json:"items"`
	Finished time.Time `json:"finished"`
}

// MarkerPath is where the marker of the output out is.
func MarkerPath(out string) string { return out + ".shard.json" }

// ShardRun is one sharded run of a stage, from Start to Finish.
type ShardRun struct {
	out string
	m   Marker
}

// StartShard removes the marker of out, if any, before a run of part
// starts writing to it. For the whole run (part.Count 1) it does nothing,
// and Finish neither. Inputs are made absolute.
func StartShard(stage, out string, part shard.Shard, inputs ...string) (*ShardRun, error) {
	if part.Count <= 1 {
		return nil, nil
	}
	var abs []string
	for _, in := range inputs {
		a, err := filepath.Abs(in)
		if err != nil {
			return nil, err
		}
		abs = append(abs, a)
	}
	if err := os.Remove(MarkerPath(out)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove the marker of an earlier run: %w", err)
	}
	return &ShardRun{out: out, m: Marker{Stage: stage, Shard: part.String(), Inputs: abs}}, nil
}

// Param records an option that decides the items (nil-safe).
func (r *ShardRun) Param(name, value string) {
	if r == nil {
		return
	}
	if r.m.Params == nil {
		r.m.Params = map[string]string{}
	}
	r.m.Params[name] = value
}

// Finish writes the marker: the run of the shard, with items items, is
// complete. Call it only when the stage ran to its end. A nil run (the
// whole run) writes nothing.
func (r *ShardRun) Finish(items int) error {
	if r == nil {
		return nil
	}
	r.m.Items = items
	r.m.Finished = time.Now().UTC().Truncate(time.Second)
	data, err := json.MarshalIndent(r.m, "", "  ")
	if err != nil {
		return err
	}
	path := MarkerPath(r.out)
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return fmt.Errorf("write shard marker: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write shard marker: %w", err)
	}
	return nil
}

// ReadMarker reads the marker of out; nil when there is none.
func ReadMarker(out string) (*Marker, error) {
	data, err := os.ReadFile(MarkerPath(out))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var m Marker
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", MarkerPath(out), err)
	}
	if _, err := shard.Parse(m.Shard); err != nil || m.Shard == "" {
		return nil, fmt.Errorf("%s: shard %q is not i/n", MarkerPath(out), m.Shard)
	}
	return &m, nil
}
