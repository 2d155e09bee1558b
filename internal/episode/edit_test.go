package episode

import (
	"strings"
	"testing"
)

func TestParseEdit(t *testing.T) {
	cases := []struct {
		input                      string
		path, search, replace, msg string
	}{
		{"a.py\n<<<<<<< SEARCH\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE", "a.py", "x = 1", "x = 2", ""},
		// The path is the line right before the SEARCH marker.
		{"some words\nsrc/a.py\n<<<<<<< SEARCH\nx\n=======\n>>>>>>> REPLACE", "", "", "", EditParseError},
		{"some words\nsrc/a.py\n<<<<<<< SEARCH\nx\n=======\n\n>>>>>>> REPLACE", "src/a.py", "x", "", ""},
		{"a.py\n<<<<<<< SEARCH\nl1\nl2\n=======\nr1\n>>>>>>> REPLACE\n", "a.py", "l1\nl2", "r1", ""},
		{"a.py\nx = 1\n=======\nx = 2\n>>>>>>> REPLACE", "", "", "", EditParseError},
		{"a.py\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\na.py\n<<<<<<< SEARCH\nc\n=======\nd\n>>>>>>> REPLACE",
			"", "", "", "Only one search/replace block is allowed. Got: 2."},
	}
	for _, c := range cases {
		p, s, r, msg := parseEdit(c.input)
		if p != c.path || s != c.search || r != c.replace || msg != c.msg {
			t.Errorf("parseEdit(%q) = %q, %q, %q, %q; want %q, %q, %q, %q", c.input, p, s, r, msg, c.path, c.search, c.replace, c.msg)
		}
	}
}

// CWM-SPEC 2.2: "the search lines must match consecutive whole lines
// exactly and uniquely; zero matches and multiple matches are errors that
// say which (multiple: with line numbers); success shows the edited region
// with 8 lines of context, numbered `%6d\t`."
//
// The expected messages and contents were checked against a line-by-line
// transliteration of CWM's plugins/edit.py run on the same inputs.
func TestApplyEdit(t *testing.T) {
	const file = "def f():\n    return 1\n\n\ndef g():\n    return 1\n"
	cases := []struct {
		name, content, search, replace string
		want, msg                      string
		ok                             bool
	}{
		{"unique", file, "def g():\n    return 1", "def g():\n    return 2", "def f():\n    return 1\n\n\ndef g():\n    return 2\n",
			"File a.py has been successfully updated at line 5 and now contains 7 lines. The surrounding lines after the edit are shown below:\n" +
				"     1\tdef f():\n     2\t    return 1\n     3\t\n     4\t\n     5\tdef g():\n     6\t    return 2\n     7\t\n" +
				"Review the changes and make sure they are as expected.", true},
		{"several", file, "    return 1", "    return 2", "",
			"No replacement was performed. Multiple occurrences of the search text in lines [2, 6] of a.py. Please ensure it is unique.", false},
		{"indentation", file, "return 1", "return 2", "",
			"No replacement was performed, the search lines did not appear verbatim in a.py. The search lines must exactly match one or more consecutive lines from the file, with indentations preserved.", false},
		{"absent", file, "def h():", "", "",
			"No replacement was performed, the search lines did not appear verbatim in a.py.", false},
		{"partial line", file, "def", "fn", "",
			"No replacement was performed. Multiple occurrences of the search text in lines [1, 5] of a.py. Please ensure it is unique.", false},
		{"delete lines", "a\nb\nc\n", "b", "", "a\n\nc\n",
			"File a.py has been successfully updated at line 2 and now contains 4 lines. The surrounding lines after the edit are shown below:\n" +
				"     1\ta\n     2\t\n     3\tc\n     4\t\n" +
				"Review the changes and make sure they are as expected.", true},
	}
	for _, c := range cases {
		got, msg, ok := applyEdit("a.py", c.content, c.search, c.replace)
		if got != c.want || msg != c.msg || ok != c.ok {
			t.Errorf("%s: applyEdit = %q, %q, %v; want %q, %q, %v", c.name, got, msg, ok, c.want, c.msg, c.ok)
		}
	}
}

func TestSnippetWindow(t *testing.T) {
	// 30 lines; replacing line 15 with three lines shows 7..(15+8+2).
	content := ""
	for i := 1; i <= 30; i++ {
		content += "line" + string(rune('A'+i%26)) + "\n"
	}
	_, msg, ok := applyEdit("f", content, "lineP", "x\ny\nz")
	if !ok {
		t.Fatalf("edit failed: %s", msg)
	}
	for _, want := range []string{"\n     7\tlineH\n", "\n    25\tlineX\n"} {
		if !strings.Contains(msg, want) {
			t.Errorf("snippet lacks %q:\n%s", want, msg)
		}
	}
	if strings.Contains(msg, "     6\t") || strings.Contains(msg, "    26\t") {
		t.Errorf("snippet wider than lines 7-25:\n%s", msg)
	}
}

func TestTextMode(t *testing.T) {
	cases := map[string]string{"a\r\nb\rc\n": "a\nb\nc\n", "plain\n": "plain\n"}
	for in, want := range cases {
		if got := textMode([]byte(in)); got != want {
			t.Errorf("textMode(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestParseCreate(t *testing.T) {
	cases := []struct{ input, path, content, msg string }{
		{"new.py\nprint(1)\n", "new.py", "print(1)\n", "File created successfully at: new.py (2 lines)."},
		{"empty.txt", "empty.txt", "", "File created successfully at: empty.txt (1 lines)."},
		{"a/b.py\nx\ny", "a/b.py", "x\ny", "File created successfully at: a/b.py (2 lines)."},
	}
	for _, c := range cases {
		p, content := parseCreate(c.input)
		if p != c.path || content != c.content || createdMessage(p, content) != c.msg {
			t.Errorf("parseCreate(%q) = %q, %q (%q); want %q, %q (%q)", c.input, p, content, createdMessage(p, content), c.path, c.content, c.msg)
		}
	}
}
