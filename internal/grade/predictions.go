package grade

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"

	"cwm/internal/errkind"
	"cwm/internal/jsonl"
)

// ReadPredictions reads a predictions file as SWE-bench takes one: a JSON
// list of predictions, or JSONL. Each must have an instance_id and
// model_patch (null allowed) and appear once.
func ReadPredictions(path string) ([]Prediction, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, errkind.Wrap(errkind.NotFound, err)
		}
		return nil, err
	}
	var preds []Prediction
	seen := map[string]string{}
	check := func(where string, raw []byte) error {
		var fields map[string]json.RawMessage
		if err := json.Unmarshal(raw, &fields); err != nil {
			return errkind.Errorf(errkind.Input, "not a JSON object: %v", err)
		}
		if _, ok := fields["model_patch"]; !ok {
			return errkind.New(errkind.Input, "no model_patch")
		}
		var p Prediction
		if err := json.Unmarshal(raw, &p); err != nil {
			return errkind.Errorf(errkind.Input, "%v", err)
		}
		if p.InstanceID == "" {
			return errkind.New(errkind.Input, "no instance_id")
		}
		if prev, ok := seen[p.InstanceID]; ok {
			return errkind.Errorf(errkind.Input, "instance_id %q already at %s", p.InstanceID, prev)
		}
		seen[p.InstanceID] = where
		preds = append(preds, p)
		return nil
	}
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '[' {
		var list []json.RawMessage
		if err := json.Unmarshal(t, &list); err != nil {
			return nil, errkind.Errorf(errkind.Input, "%s: not a JSON list of predictions: %v", path, err)
		}
		for i, raw := range list {
			where := fmt.Sprintf("%s: prediction %d", path, i+1)
			if err := check(where, raw); err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
		}
		return preds, nil
	}
	err = jsonl.ScanInput(path, func(n int, line []byte) error {
		return check(fmt.Sprintf("line %d", n), line)
	})
	return preds, err
}
