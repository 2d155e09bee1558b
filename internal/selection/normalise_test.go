package selection

import (
	"strings"
	"testing"
)

const goldDiff = `diff --git a/textkit/case.py b/textkit/case.py
index 1111111..2222222 100644
--- a/textkit/case.py
+++ b/textkit/case.py
@@ -18,7 +18,7 @@ def _parts(name):
 def snake_case(name):
     """Convert an identifier to snake_case."""
     parts = _parts(name)
-    return "-".join(parts)
+    return "_".join(parts)
 
 
 def kebab_case(name):
`

func TestNormaliseEqual(t *testing.T) {
	// The same change with one line of context, a comment, spaces
	// around tokens, trailing whitespace, and an added blank line.
	formatted := `--- a/textkit/case.py
+++ b/textkit/case.py
@@ -20,3 +20,5 @@
     parts = _parts(name)
-    return "-".join(parts)
+    # join with underscores, as the name says
+    return "_" .join( parts )   
+
 
`
	other := `diff --git a/textkit/stats.py b/textkit/stats.py
--- a/textkit/stats.py
+++ b/textkit/stats.py
@@ -5,1 +5,1 @@
-x = 1
+x = 2
`
	tests := []struct {
		name string
		a, b string
	}{
		{"context, comment, spacing, blank line", goldDiff, formatted},
		{"file order", goldDiff + other, other + goldDiff},
		{"CRLF", goldDiff, replaceAll(goldDiff, "\n", "\r\n")},
	}
	for _, tc := range tests {
		if na, nb := Normalise(tc.a), Normalise(tc.b); na != nb || na == "" {
			t.Errorf("%s: Normalise differs or is empty:\n%q\n%q", tc.name, na, nb)
		}
	}
}

func TestNormaliseDifferent(t *testing.T) {
	tests := []struct {
		name string
		b    string
	}{
		{"string content", replaceAll(goldDiff, `+    return "_".join(parts)`, `+    return "__".join(parts)`)},
		{"space inside a string", replaceAll(goldDiff, `+    return "_".join(parts)`, `+    return "_ ".join(parts)`)},
		{"indentation", replaceAll(goldDiff, `+    return "_".join(parts)`, `+        return "_".join(parts)`)},
		{"quotes", replaceAll(goldDiff, `+    return "_".join(parts)`, `+    return '_'.join(parts)`)},
		{"another line", replaceAll(goldDiff, "@@ -18,7 +18,7 @@", "@@ -30,7 +30,7 @@")},
		{"# inside a string", replaceAll(goldDiff, `+    return "_".join(parts)`, `+    return "_".join(parts) + "#x"`)},
	}
	for _, tc := range tests {
		if Normalise(goldDiff) == Normalise(tc.b) {
			t.Errorf("%s: Normalise equal for different programs:\n%s", tc.name, Normalise(tc.b))
		}
	}
}

func TestNormaliseNothing(t *testing.T) {
	commentOnly := `--- a/textkit/case.py
+++ b/textkit/case.py
@@ -20,1 +20,2 @@
     parts = _parts(name)
+    # TODO
`
	for _, p := range []string{"", "  \n", "not a diff at all\n", commentOnly} {
		if n := Normalise(p); n != "" {
			t.Errorf("Normalise(%q) = %q, want \"\"", p, n)
		}
	}
}

func TestNormPython(t *testing.T) {
	for in, want := range map[string]string{
		`    return "_" .join( parts )  # fix`: `    return "_".join(parts)`,
		`if not  x :`:                          `if not x:`,
		`s = r"a # b"  # c`:                    `s=r"a # b"`,
		`x = '''a  b'''`:                       `x='''a  b'''`,
		`y = a+b`:                              `y=a+b`,
		`y = a + b`:                            `y=a+b`,
	} {
		if got := normPython(in); got != want {
			t.Errorf("normPython(%q) = %q, want %q", in, got, want)
		}
	}
}

func replaceAll(s, old, new string) string { return strings.ReplaceAll(s, old, new) }
