package envserver

import (
	"encoding/json"
	"fmt"
	"strings"
)

// OpenEnv's WebSocket error codes (WSErrorCode in
// src/openenv/core/env_server/types.py).
const (
	CodeInvalidJSON     = "INVALID_JSON"
	CodeUnknownType     = "UNKNOWN_TYPE"
	CodeValidationError = "VALIDATION_ERROR"
	CodeExecutionError  = "EXECUTION_ERROR"
	CodeCapacityReached = "CAPACITY_REACHED"
	CodeFactoryError    = "FACTORY_ERROR"
	CodeSessionError    = "SESSION_ERROR"
)

// Result is what a reset or a step returns: OpenEnv's serialized
// observation, {"observation": {...}, "reward": R, "done": D}. The
// observation object of cwm's kinds carries its metadata inside it
// (OpenEnv's serializer drops an observation's metadata from the wire;
// cwm's rewards are explained there, so it stays).
type Result struct {
	Observation any      `json:"observation"`
	Reward      *float64 `json:"reward"`
	Done        bool     `json:"done"`
}

// wsMessage is a message from a /ws client: {"type": ..., "data": ...}.
type wsMessage struct {
	Type string          `json:"type"`
	Data json.RawMessage `json:"data"`
}

// wsReply is a message to a /ws client.
type wsReply struct {
	Type string `json:"type"`
	Data any    `json:"data"`
}

// fieldError is one entry of a validation error's "errors", in the shape
// pydantic's ValidationError.errors() gives OpenEnv clients.
type fieldError struct {
	Type string `json:"type"`
	Loc  []any  `json:"loc"`
	Msg  string `json:"msg"`
}

// validationError is a message or an action that does not fit its schema:
// OpenEnv's VALIDATION_ERROR, HTTP 422.
type validationError struct {
	errs []fieldError
}

func (e *validationError) Error() string {
	parts := make([]string, len(e.errs))
	for i, f := range e.errs {
		loc := make([]string, len(f.Loc))
		for j, l := range f.Loc {
			loc[j] = fmt.Sprint(l)
		}
		parts[i] = strings.Join(loc, ".") + ": " + f.Msg
	}
	return "invalid message: " + strings.Join(parts, "; ")
}

// invalid makes a validation error of one field.
func invalid(typ, msg string, loc ...any) error {
	return &validationError{errs: []fieldError{{Type: typ, Loc: loc, Msg: msg}}}
}

// decodeObject decodes raw, a JSON object, into v (a pointer to a struct
// with json tags), refusing fields v does not have, as OpenEnv's models
// (extra="forbid") do; where says where raw is in the message ("data").
// Null or absent raw leaves v as it is.
func decodeObject(raw json.RawMessage, v any, where ...any) error {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var probe map[string]json.RawMessage
	if err := json.Unmarshal(raw, &probe); err != nil {
		return invalid("dict_type", "Input should be a valid dictionary", where...)
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return fieldErr(err, where)
	}
	return nil
}

// fieldErr turns a decoding error into a validation error that names the
// field.
func fieldErr(err error, where []any) error {
	var te *json.UnmarshalTypeError
	if ok := asTypeError(err, &te); ok {
		loc := append(append([]any{}, where...), pathOf(te.Field)...)
		return invalid(te.Value+"_type", fmt.Sprintf("Input should be of type %s", jsonType(te.Type.Kind().String())), loc...)
	}
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		loc := append(append([]any{}, where...), strings.Trim(name, `"`))
		return invalid("extra_forbidden", "Extra inputs are not permitted", loc...)
	}
	return invalid("value_error", msg, where...)
}

func asTypeError(err error, te **json.UnmarshalTypeError) bool {
	t, ok := err.(*json.UnmarshalTypeError)
	if ok {
		*te = t
	}
	return ok
}

func pathOf(field string) []any {
	if field == "" {
		return nil
	}
	var out []any
	for _, p := range strings.Split(field, ".") {
		out = append(out, p)
	}
	return out
}

// jsonType names a Go kind as JSON Schema does.
func jsonType(kind string) string {
	switch kind {
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "int", "int64", "int32", "uint", "uint64":
		return "integer"
	case "float64", "float32":
		return "number"
	case "slice", "array":
		return "array"
	}
	return "object"
}
