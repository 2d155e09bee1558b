package reward

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseDiff(t *testing.T) {
	tests := []struct {
		name, patch string
		want        []FileDiff
	}{
		{
			name: "modified file with two hunks",
			patch: "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n" +
				"@@ -1,2 +1,2 @@ def f():\n-a\n+b\n c\n@@ -9 +9,0 @@\n-z\n",
			want: []FileDiff{{OldPath: "x.py", NewPath: "x.py", Hunks: []Hunk{
				{OldStart: 1, OldLines: 2, NewStart: 1, NewLines: 2, Section: "def f():", Lines: []string{"-a", "+b", " c"}},
				{OldStart: 9, OldLines: 1, NewStart: 9, NewLines: 0, Lines: []string{"-z"}},
			}}},
		},
		{
			name:  "new empty file",
			patch: "diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n",
			want:  []FileDiff{{NewPath: "e", Header: []string{"new file mode 100644"}}},
		},
		{
			name:  "deleted file",
			patch: "diff --git a/d b/d\ndeleted file mode 100644\n--- a/d\n+++ /dev/null\n@@ -1 +0,0 @@\n-x\n",
			want: []FileDiff{{OldPath: "d", Header: []string{"deleted file mode 100644"},
				Hunks: []Hunk{{OldStart: 1, OldLines: 1, NewStart: 0, NewLines: 0, Lines: []string{"-x"}}}}},
		},
		{
			name:  "pure rename with spaces",
			patch: "diff --git a/old name.txt b/new name.txt\nsimilarity index 100%\nrename from old name.txt\nrename to new name.txt\n",
			want: []FileDiff{{OldPath: "old name.txt", NewPath: "new name.txt",
				Header: []string{"similarity index 100%", "rename from old name.txt", "rename to new name.txt"}}},
		},
		{
			name:  "copy",
			patch: "diff --git a/a.c b/b.c\nsimilarity index 95%\ncopy from a.c\ncopy to b.c\n--- a/a.c\n+++ b/b.c\n@@ -1 +1 @@\n-1\n+2\n",
			want: []FileDiff{{OldPath: "a.c", NewPath: "b.c", Header: []string{"similarity index 95%", "copy from a.c", "copy to b.c"},
				Hunks: []Hunk{{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Lines: []string{"-1", "+2"}}}}},
		},
		{
			name:  "binary file",
			patch: "diff --git a/img.png b/img.png\nindex 1..2 100644\nGIT binary patch\nliteral 5\nMcmZ?wbaG+\n\nliteral 3\nKcmZ?w\n\ndiff --git a/t b/t\n--- a/t\n+++ b/t\n@@ -1 +1 @@\n-a\n+b\n",
			want: []FileDiff{
				{OldPath: "img.png", NewPath: "img.png", Header: []string{"GIT binary patch"}},
				{OldPath: "t", NewPath: "t", Hunks: []Hunk{{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Lines: []string{"-a", "+b"}}}},
			},
		},
		{
			name:  "binary files differ",
			patch: "diff --git a/b.bin b/b.bin\nindex 1..2 100644\nBinary files a/b.bin and b/b.bin differ\n",
			want:  []FileDiff{{OldPath: "b.bin", NewPath: "b.bin", Header: []string{"Binary files a/b.bin and b/b.bin differ"}}},
		},
		{
			name:  "quoted names with escapes",
			patch: "diff --git \"a/tab\\there\" \"b/quote\\\"d\"\nrename from \"tab\\there\"\nrename to \"quote\\\"d\"\n",
			want: []FileDiff{{OldPath: "tab\there", NewPath: "quote\"d",
				Header: []string{"rename from \"tab\\there\"", "rename to \"quote\\\"d\""}}},
		},
		{
			name:  "no newline markers",
			patch: "--- a/n\n+++ b/n\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+y\n\\ No newline at end of file\n",
			want: []FileDiff{{OldPath: "n", NewPath: "n", Hunks: []Hunk{{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1,
				Lines: []string{"-x", `\ No newline at end of file`, "+y", `\ No newline at end of file`}}}}},
		},
		{
			name:  "same file twice is merged",
			patch: "--- a/m\n+++ b/m\n@@ -1 +1 @@\n-1\n+2\n--- a/m\n+++ b/m\n@@ -5 +5 @@\n-5\n+6\n",
			want: []FileDiff{{OldPath: "m", NewPath: "m", Hunks: []Hunk{
				{OldStart: 1, OldLines: 1, NewStart: 1, NewLines: 1, Lines: []string{"-1", "+2"}},
				{OldStart: 5, OldLines: 1, NewStart: 5, NewLines: 1, Lines: []string{"-5", "+6"}},
			}}},
		},
		{name: "empty", patch: "", want: nil},
		{name: "prose only", patch: "no diff here\n--- not a header\n", want: nil},
	}
	for _, tt := range tests {
		got, err := ParseDiff(tt.patch)
		if err != nil {
			t.Errorf("%s: ParseDiff: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: ParseDiff(%q) mismatch (-want +got):\n%s", tt.name, tt.patch, diff)
		}
	}
}

func TestParseDiffErrors(t *testing.T) {
	tests := []struct {
		patch, wantErr string
	}{
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", "diff line 5: hunk \"@@ -1,2 +1,2 @@\" ends early: 1 old and 1 new lines missing"},
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\nfoo\n", "diff line 5: hunk \"@@ -1,2 +1,2 @@\" ends early: 1 old and 2 new lines missing"},
		{"--- a/x\n+++ b/x\n@@ -1 +1,2 @@\n-a\n-b\n+c\n", "diff line 5: hunk \"@@ -1 +1,2 @@\" has more lines than its header says"},
		{"--- a/x\n+++ b/x\n@@ -1 +1 @\n-a\n+b\n", `diff line 3: malformed hunk header "@@ -1 +1 @"`},
		{"@@ -1 +1 @@\n-a\n+b\n", "diff line 1: hunk before any file header"},
		{"diff --git \"a/x b/x\n", "diff line 1: diff --git header"},
		{"diff --git ab\n", "diff line 1: diff --git header \"diff --git ab\": cannot split the two paths"},
	}
	for _, tt := range tests {
		_, err := ParseDiff(tt.patch)
		if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) {
			t.Errorf("ParseDiff(%q) error = %v, want prefix %q", tt.patch, err, tt.wantErr)
		}
	}
}

func TestNormalizeHunkless(t *testing.T) {
	patch := "diff --git a/old b/new\nsimilarity index 100%\nrename from old\nrename to new\n" +
		"diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n"
	got, err := Normalize(patch)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"new": "rename from old\nrename to new", "e": "new file mode 100644"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Normalize(%q) mismatch (-want +got):\n%s", patch, diff)
	}
}
