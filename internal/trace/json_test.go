package trace

import (
	"strings"
	"testing"
)

// The want column was produced by CPython 3.11:
//
//	/usr/bin/python3 -c 'import json; print(json.dumps(VALUE))'
//
// and pasted here; the tests never run Python.
var pythonStrings = []struct {
	in, want string
}{
	{"", `""`},
	{"abc", `"abc"`},
	{`q"uote`, `"q\"uote"`},
	{`back\slash`, `"back\\slash"`},
	{"a/b", `"a/b"`},
	{"nl\nx", `"nl\nx"`},
	{"cr\r", `"cr\r"`},
	{"tab\t", `"tab\t"`},
	{"bs\b", `"bs\b"`},
	{"ff\f", `"ff\f"`},
	{"\x00", `"\u0000"`},
	{"\x01\x1f", `"\u0001\u001f"`},
	{"\x7f", `"\u007f"`},
	{"<>&", `"<>&"`},
	{"\u2028\u2029", `"\u2028\u2029"`},
	{"é", `"\u00e9"`},
	{"ü€", `"\u00fc\u20ac"`},
	{"中文", `"\u4e2d\u6587"`},
	{"😀", `"\ud83d\ude00"`},
	{"\U0010ffff", `"\udbff\udfff"`},
	{"\ufffd", `"\ufffd"`},
	{"\u00a0", `"\u00a0"`},
	{"'a'", `"'a'"`},
	{"[' ', '  ']", `"[' ', '  ']"`},
	{"\x1b[0m", `"\u001b[0m"`},
	{"~ ", `"~ "`},
	{"<|frame_sep|>", `"<|frame_sep|>"`},
}

func TestAppendStringMatchesPython(t *testing.T) {
	for _, tc := range pythonStrings {
		if got := string(appendString(nil, tc.in)); got != tc.want {
			t.Errorf("appendString(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestReadStringStrictInvertsPython(t *testing.T) {
	for _, tc := range pythonStrings {
		got, end, err := readString(tc.want, 0, true)
		if err != nil || got != tc.in || end != len(tc.want) {
			t.Errorf("readString(%s, strict) = %q, %d, %v, want %q, %d, nil", tc.want, got, end, err, tc.in, len(tc.want))
		}
	}
}

func TestLocalsMatchPython(t *testing.T) {
	tests := []struct {
		in   []Local
		want string
	}{
		{nil, `{}`},
		{L("a", "1", "b", "3"), `{"a": "1", "b": "3"}`},
		{L(".0", "<list_iterator object>", "é", "x"), `{".0": "<list_iterator object>", "\u00e9": "x"}`},
	}
	for _, tc := range tests {
		if got := string(appendLocals(nil, tc.in)); got != tc.want {
			t.Errorf("appendLocals(%v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

// Strict reading refuses every spelling json.dumps would not write, at the
// byte that differs; lenient reading takes what json.loads takes.
func TestReadStringSpellings(t *testing.T) {
	tests := []struct {
		in         string
		strictAt   int    // offset of the strict error
		lenient    string // value read leniently
		lenientErr bool
	}{
		{in: `"\/"`, strictAt: 1, lenient: "/"},
		{in: `"\u00E9"`, strictAt: 5, lenient: "é"},
		{in: `"é"`, strictAt: 1, lenient: "é"},
		{in: `"\u0041"`, strictAt: 1, lenient: "A"},
		{in: `"\u000a"`, strictAt: 1, lenient: "\n"},
		{in: `"\u0022"`, strictAt: 1, lenient: `"`},
		{in: `"\ud800"`, strictAt: 1, lenient: "\ufffd"},
		{in: `"\ude00x"`, strictAt: 1, lenient: "\ufffdx"},
		{in: `"\ud83d\u0041"`, strictAt: 1, lenient: "\ufffdA"},
		{in: `"\ud83d\uDE00"`, strictAt: 9, lenient: "😀"},
		{in: "\"\x7f\"", strictAt: 1, lenient: "\x7f"},
		{in: "\"a\xffb\"", strictAt: 2, lenient: "a\ufffdb"},
		{in: "\"tab\t\"", strictAt: 4, lenientErr: true},
		{in: `"\x"`, strictAt: 1, lenientErr: true},
		{in: `"\u12"`, strictAt: 1, lenientErr: true},
		{in: `"\u12x4"`, strictAt: 5, lenientErr: true},
		{in: `"abc`, strictAt: 4, lenientErr: true},
		{in: `abc"`, strictAt: 0, lenientErr: true},
		{in: `"\`, strictAt: 2, lenientErr: true},
	}
	for _, tc := range tests {
		_, _, err := readString(tc.in, 0, true)
		if err == nil || err.Offset != tc.strictAt {
			t.Errorf("readString(%q, strict) error = %v, want one at offset %d", tc.in, err, tc.strictAt)
		}
		got, _, err := readString(tc.in, 0, false)
		switch {
		case tc.lenientErr && err == nil:
			t.Errorf("readString(%q, lenient) = %q, want an error", tc.in, got)
		case !tc.lenientErr && (err != nil || got != tc.lenient):
			t.Errorf("readString(%q, lenient) = %q, %v, want %q", tc.in, got, err, tc.lenient)
		}
	}
}

func TestInvalidUTF8EncodesAsReplacement(t *testing.T) {
	if got, want := string(appendString(nil, "a\xffb")), `"a\ufffdb"`; got != want {
		t.Errorf("appendString(%q) = %s, want %s", "a\xffb", got, want)
	}
}

func TestReadStringAllocatesOnlyForEscapes(t *testing.T) {
	s := `"` + strings.Repeat("x", 100) + `"`
	allocs := testing.AllocsPerRun(100, func() { _, _, _ = readString(s, 0, true) })
	if allocs != 0 {
		t.Errorf("readString of an unescaped string allocates %v times, want 0", allocs)
	}
}
