package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"cwm/internal/errkind"
)

// Unmarshal decodes one line into v like json.Unmarshal, with errors a
// person can act on: a value of the wrong type names its field and the
// type wanted (`field "FAIL_TO_PASS": want an array of strings, got a
// string`), and a syntax error says where it is. Both are errors of kind
// errkind.Input.
func Unmarshal(line []byte, v any) error {
	err := json.Unmarshal(line, v)
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &te):
		return errkind.Wrap(errkind.Input, typeError(te, v))
	case errors.As(err, &se):
		return errkind.Errorf(errkind.Input, "not valid JSON: %v (at byte %d)", se, se.Offset)
	}
	return err
}

// typeError rewords e. encoding/json reports the innermost Go type that
// failed (string, for a number inside a []string), so the field's declared
// type is looked up in v's type by its JSON path to say what was wanted.
func typeError(e *json.UnmarshalTypeError, v any) error {
	got := describeValue(e.Value)
	if e.Field == "" {
		return fmt.Errorf("want %s, got %s", describeType(e.Type), got)
	}
	want := describeType(e.Type)
	if decl := fieldType(reflect.TypeOf(v), e.Field); decl != nil {
		if d := deref(decl); d != deref(e.Type) && containerOf(d, e.Type) {
			want = describeType(decl)
			got = "an " + containerWord(d) + " holding " + got
		}
	}
	return fmt.Errorf("field %q: want %s, got %s", e.Field, want, got)
}

// fieldType follows a dotted JSON path ("validation.checks") through the
// struct fields of t and returns the type declared for the last one, or nil.
func fieldType(t reflect.Type, path string) reflect.Type {
	for _, name := range strings.Split(path, ".") {
		t = deref(t)
		if t == nil || t.Kind() != reflect.Struct {
			return nil
		}
		f, ok := jsonField(t, name)
		if !ok {
			return nil
		}
		t = f.Type
	}
	return t
}

// jsonField finds the field of struct type t that JSON name encodes to,
// looking into embedded structs as encoding/json does.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if tag == "-" {
			continue
		}
		if f.Anonymous && tag == "" {
			if et := deref(f.Type); et.Kind() == reflect.Struct {
				if g, ok := jsonField(et, name); ok {
					return g, true
				}
			}
			continue
		}
		if tag == name || tag == "" && strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

func deref(t reflect.Type) reflect.Type {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return t
}

// containerOf reports whether t is an array or map whose elements (at any
// depth) are of type elem.
func containerOf(t, elem reflect.Type) bool {
	for t != nil {
		switch t.Kind() {
		case reflect.Slice, reflect.Array, reflect.Map:
			t = deref(t.Elem())
			if t == deref(elem) {
				return true
			}
		default:
			return false
		}
	}
	return false
}

func containerWord(t reflect.Type) string {
	if t.Kind() == reflect.Map {
		return "object"
	}
	return "array"
}

// describeType names what JSON value a Go type takes: "a string", "an
// array of strings", "an object".
func describeType(t reflect.Type) string {
	t = deref(t)
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + plural(t.Elem())
	case reflect.Map:
		if t.Elem().Kind() == reflect.Interface {
			return "an object"
		}
		return "an object of " + plural(t.Elem())
	case reflect.Struct:
		return "an object"
	}
	return "a " + t.Kind().String()
}

// plural is describeType for several values: "strings", "arrays of strings".
func plural(t reflect.Type) string {
	_, rest, _ := strings.Cut(describeType(t), " ") // without its article
	head, tail, ok := strings.Cut(rest, " ")
	if !ok {
		return rest + "s"
	}
	return head + "s " + tail
}

// describeValue turns encoding/json's description of a JSON value
// ("string", "number -5", "array") into "a string", "a number", "an array".
func describeValue(v string) string {
	kind, _, _ := strings.Cut(v, " ")
	switch kind {
	case "string":
		return "a string"
	case "number":
		return "a number"
	case "bool":
		return "a boolean"
	case "array":
		return "an array"
	case "object":
		return "an object"
	case "":
		return "a value"
	}
	return kind
}
