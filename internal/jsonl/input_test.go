package jsonl

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/errkind"

	"github.com/google/go-cmp/cmp"
)

// inputTask has the shapes of cwm's task schema that loaders decode.
type inputTask struct {
	ID         string   `json:"instance_id"`
	FailToPass []string `json:"FAIL_TO_PASS"`
	Validation *struct {
		Checks []string `json:"checks"`
		Runs   int      `json:"tests_run"`
	} `json:"validation"`
	Counts map[string]int `json:"counts"`
	Nested [][]string     `json:"nested"`
	Flag   bool           `json:"flag"`
	Score  float64        `json:"score"`
}

func TestUnmarshalErrors(t *testing.T) {
	tests := []struct{ line, want string }{
		{`{"FAIL_TO_PASS": "test_a"}`, `field "FAIL_TO_PASS": want an array of strings, got a string`},
		{`{"FAIL_TO_PASS": ["a", 2]}`, `field "FAIL_TO_PASS": want an array of strings, got an array holding a number`},
		{`{"instance_id": 7}`, `field "instance_id": want a string, got a number`},
		{`{"validation": {"checks": "x"}}`, `field "validation.checks": want an array of strings, got a string`},
		{`{"validation": {"tests_run": 1.5}}`, `field "validation.tests_run": want an integer, got a number`},
		{`{"validation": []}`, `field "validation": want an object, got an array`},
		{`{"counts": {"a": "b"}}`, `field "counts": want an object of integers, got an object holding a string`},
		{`{"nested": [["a"], [true]]}`, `field "nested": want an array of arrays of strings, got an array holding a boolean`},
		{`{"flag": "yes"}`, `field "flag": want a boolean, got a string`},
		{`{"score": {}}`, `field "score": want a number, got an object`},
		{`["a"]`, `want an object, got an array`},
		{`"a"`, `want an object, got a string`},
		{`{"instance_id": "a",}`, `not valid JSON: invalid character '}' looking for beginning of object key string (at byte 21)`},
		{`{"instance_id": "a"} x`, `not valid JSON: invalid character 'x' after top-level value (at byte 22)`},
	}
	for _, tt := range tests {
		var v inputTask
		err := Unmarshal([]byte(tt.line), &v)
		if err == nil || err.Error() != tt.want {
			t.Errorf("Unmarshal(%s) = %v, want %q", tt.line, err, tt.want)
		}
	}
	var v inputTask
	if err := Unmarshal([]byte(`{"instance_id": "a", "FAIL_TO_PASS": ["t"]}`), &v); err != nil || v.ID != "a" {
		t.Errorf("Unmarshal(valid) = %+v, %v, want instance_id a and no error", v, err)
	}
}

func TestScanInput(t *testing.T) {
	tests := []struct {
		name, content string
		want          []string
		torn          int // line of the expected TornLineError; 0 for none
	}{
		{"complete", "1\n2\n", []string{"1:1", "2:2"}, 0},
		{"last line without newline is read", "1\n{\"a\": 2}", []string{"1:1", "2:{\"a\": 2}"}, 0},
		{"torn last line", "1\n2\n{\"a\":", []string{"1:1", "2:2"}, 3},
		{"torn after a blank line", "1\n\n{\"a", []string{"1:1"}, 3},
		{"only torn", "{\"instance_id\": \"x", nil, 1},
		{"trailing spaces without newline", "1\n  ", []string{"1:1"}, 0},
		{"long torn line", "1\n\"" + strings.Repeat("z", 200<<10), []string{"1:1"}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			var got []string
			err := ScanInput(path, func(n int, line []byte) error {
				got = append(got, fmt.Sprintf("%d:%s", n, line))
				return nil
			})
			var torn *TornLineError
			switch {
			case tt.torn == 0 && err != nil:
				t.Fatalf("ScanInput: %v", err)
			case tt.torn != 0 && !errors.As(err, &torn):
				t.Fatalf("ScanInput error = %v, want a TornLineError", err)
			case tt.torn != 0 && (torn.Line != tt.torn || !strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: the last line is cut off", path, tt.torn))):
				t.Errorf("ScanInput error = %v (line %d), want line %d", err, torn.Line, tt.torn)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ScanInput lines mismatch (-want +got):\n%.2000s", diff)
			}
			// The same file read to resume: the torn line is skipped.
			if tt.torn != 0 {
				if err := Scan(path, func(int, []byte) error { return nil }); err != nil {
					t.Errorf("Scan of a torn file = %v, want nil", err)
				}
			}
		})
	}
}

func TestScanInputMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing.jsonl")
	err := ScanInput(path, func(int, []byte) error { return nil })
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ScanInput(missing) = %v, want an error wrapping fs.ErrNotExist", err)
	}
}

func TestDecodeInputNamesField(t *testing.T) {
	path := writeFile(t, "{\"instance_id\": \"a\"}\n{\"instance_id\": \"b\", \"FAIL_TO_PASS\": \"t\"}\n")
	err := DecodeInput(path, func(int, inputTask) error { return nil })
	want := path + `:2: field "FAIL_TO_PASS": want an array of strings, got a string`
	if err == nil || err.Error() != want {
		t.Errorf("DecodeInput error = %v, want %q", err, want)
	}
}

// Problems of an input file are errors of kind errkind.Input, which the
// command line reports without a stack of causes and a server as a 422.
func TestInputErrorKinds(t *testing.T) {
	var v struct{ N int }
	for _, line := range []string{`{"N": "x"}`, `{"N": `} {
		if err := Unmarshal([]byte(line), &v); !errkind.Is(err, errkind.Input) {
			t.Errorf("Unmarshal(%s) = %v, kind %v; want an input error", line, err, errkind.Of(err))
		}
	}
	p := filepath.Join(t.TempDir(), "torn.jsonl")
	os.WriteFile(p, []byte("{\"a\": 1}\n{\"a\""), 0o644)
	if err := ScanInput(p, func(int, []byte) error { return nil }); !errkind.Is(err, errkind.Input) {
		t.Errorf("ScanInput(torn) = %v, want an input error", err)
	}
	if err := ScanInput(p+".missing", func(int, []byte) error { return nil }); !errkind.Is(err, errkind.NotFound) {
		t.Errorf("ScanInput(missing) = %v, want a not-found error", err)
	}
}
