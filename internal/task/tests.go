package task

import (
	"bytes"
	"cwm/internal/errkind"
	"encoding/json"
)

// UnmarshalJSON reads a task as Load's callers expect, and also
// FAIL_TO_PASS and PASS_TO_PASS given as a JSON-encoded string holding the
// list ("[\"a\", \"b\"]"): that is how the published SWE-bench-family
// datasets store them (their Parquet and Hugging Face rows have string
// columns), so their rows load as they are.
func (t *Task) UnmarshalJSON(b []byte) error {
	type plain Task // no methods: no recursion
	var raw struct {
		*plain
		FailToPass json.RawMessage `json:"FAIL_TO_PASS"`
		PassToPass json.RawMessage `json:"PASS_TO_PASS"`
	}
	raw.plain = (*plain)(t)
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	var err error
	if t.FailToPass, err = testList("FAIL_TO_PASS", raw.FailToPass); err != nil {
		return err
	}
	t.PassToPass, err = testList("PASS_TO_PASS", raw.PassToPass)
	return err
}

// testList reads a list of test ids given as a JSON list, null, or a JSON
// string that encodes a list.
func testList(field string, b json.RawMessage) ([]string, error) {
	b = bytes.TrimSpace(b)
	if len(b) == 0 || bytes.Equal(b, []byte("null")) {
		return nil, nil
	}
	var l []string
	if b[0] != '"' {
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, errkind.Errorf(errkind.Input, "field %q: want a list of test ids or a JSON string holding one, got %.40s", field, b)
		}
		return l, nil
	}
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, errkind.Errorf(errkind.Input, "field %q: %v", field, err)
	}
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return nil, errkind.Errorf(errkind.Input, "field %q: a string that is not a JSON list of test ids (%.40q)", field, s)
	}
	return l, nil
}
