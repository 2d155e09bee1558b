package reward

// A scored line is its input line, members in their order, with the
// grading's members set: field, objectFields and marshalFields keep the
// members as they came.

import (
	"bytes"
	"encoding/json"
	"errors"

	"cwm/internal/jsonl"
)

// field is one member of a JSON object, kept in its order.
type field struct {
	key   string
	value json.RawMessage
}

// objectFields splits a JSON object into its members in order, so that an
// output line keeps the input's fields as they were.
func objectFields(line []byte) ([]field, error) {
	if !json.Valid(line) {
		return nil, jsonl.Unmarshal(line, new(any)) // says where it is invalid
	}
	dec := json.NewDecoder(bytes.NewReader(line))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, errors.New("not a JSON object")
	}
	var fields []field
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, err
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, err
		}
		fields = append(fields, field{tok.(string), v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, err
	}
	return fields, nil
}

// has reports whether the object has the member key.
func has(fields []field, key string) bool {
	for _, f := range fields {
		if f.key == key {
			return true
		}
	}
	return false
}

// setField replaces the member key, or appends it.
func setField(fields []field, key string, v any) []field {
	raw, err := json.Marshal(v)
	if err != nil {
		raw = []byte("null") // only plain data is set; cannot happen
	}
	for i := range fields {
		if fields[i].key == key {
			fields[i].value = raw
			return fields
		}
	}
	return append(fields, field{key, raw})
}

func marshalFields(fields []field) []byte {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, f := range fields {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(f.key)
		b.Write(k)
		b.WriteByte(':')
		b.Write(f.value)
	}
	b.WriteByte('}')
	return b.Bytes()
}
