package taskimport

import (
	"encoding/json"
	"fmt"
	"strings"
)

// rowError is what is wrong with a row: the reason it is left out.
type rowError struct{ msg string }

func (e *rowError) Error() string { return e.msg }

func bad(format string, args ...any) error { return &rowError{fmt.Sprintf(format, args...)} }

// str is the string field name of r: a missing or null field, or one of
// another type, is a row error naming it.
func (r row) str(name string) (string, error) {
	v, ok := r.fields[name]
	switch {
	case !ok:
		return "", bad("missing field %q", name)
	case v == nil:
		return "", bad("field %q is null", name)
	}
	s, ok := v.(string)
	if !ok {
		return "", bad("field %q is %s, want a string", name, kind(v))
	}
	return s, nil
}

// nonEmpty is str, also refusing "".
func (r row) nonEmpty(name string) (string, error) {
	s, err := r.str(name)
	if err == nil && strings.TrimSpace(s) == "" {
		err = bad("field %q is empty", name)
	}
	return s, err
}

// opt is an optional string field: "" when missing or null; of another
// type, a row error.
func (r row) opt(name string) (string, error) {
	if v, ok := r.fields[name]; !ok || v == nil {
		return "", nil
	}
	return r.str(name)
}

// first is the first of names that the row has (not null), or "" .
func (r row) first(names ...string) (string, error) {
	for _, n := range names {
		if s, err := r.opt(n); err != nil || s != "" {
			return s, err
		}
	}
	return "", nil
}

// tests is a list of test ids, given as a list or a JSON-encoded string
// (the published datasets' form); missing or null is none.
func (r row) tests(name string) ([]string, error) {
	v, ok := r.fields[name]
	if !ok || v == nil {
		return nil, nil
	}
	switch v := v.(type) {
	case string:
		var l []string
		if err := json.Unmarshal([]byte(v), &l); err != nil {
			return nil, bad("field %q is a string that is not a JSON list of test ids (%.40q)", name, v)
		}
		return l, nil
	case []any:
		l := make([]string, 0, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok {
				return nil, bad("field %q: item %d is %s, want a string", name, i, kind(x))
			}
			l = append(l, s)
		}
		return l, nil
	}
	return nil, bad("field %q is %s, want a list of test ids", name, kind(v))
}

// object is a JSON object field, given as an object or a JSON-encoded
// string (SWE-rebench V2's install_config, R2E-Gym's
// expected_output_json).
func (r row) object(name string) (map[string]any, error) {
	v, ok := r.fields[name]
	switch {
	case !ok:
		return nil, bad("missing field %q", name)
	case v == nil:
		return nil, bad("field %q is null", name)
	}
	switch v := v.(type) {
	case map[string]any:
		return v, nil
	case string:
		var m map[string]any
		if err := json.Unmarshal([]byte(v), &m); err != nil || m == nil {
			return nil, bad("field %q is a string that is not a JSON object (%.40q)", name, v)
		}
		return m, nil
	}
	return nil, bad("field %q is %s, want an object", name, kind(v))
}

func kind(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case float64, int64, int32, int, float32:
		return "a number"
	case bool:
		return "a boolean"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// field is a string field read into dst by get (str, nonEmpty, opt).
type field struct {
	dst  *string
	get  func(string) (string, error)
	name string
}

// fill reads fields in order, stopping at the first that is wrong.
func fill(fields ...field) error {
	for _, f := range fields {
		v, err := f.get(f.name)
		if err != nil {
			return err
		}
		*f.dst = v
	}
	return nil
}
