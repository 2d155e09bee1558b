package reward

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePatch(t *testing.T) {
	tests := []struct {
		name, patch string
		want        []PatchedFile
	}{
		{
			name: "modified file with two hunks",
			patch: "diff --git a/x.py b/x.py\nindex 1..2 100644\n--- a/x.py\n+++ b/x.py\n" +
				"@@ -1,2 +1,2 @@ def f():\n-a\n+b\n c\n@@ -9 +9,0 @@\n-z\n",
			want: []PatchedFile{{SourceFile: "a/x.py", TargetFile: "b/x.py", Hunks: []Hunk{
				{SourceStart: 1, SourceLength: 2, TargetStart: 1, TargetLength: 2, Section: "def f():", Lines: []string{"-a\n", "+b\n", " c\n"}},
				{SourceStart: 9, SourceLength: 1, TargetStart: 9, TargetLength: 0, Lines: []string{"-z\n"}},
			}}},
		},
		{
			name:  "new empty file",
			patch: "diff --git a/e b/e\nnew file mode 100644\nindex 0000000..e69de29\n",
			want:  []PatchedFile{{SourceFile: "/dev/null", TargetFile: "b/e"}},
		},
		{
			name:  "plain diff, empty context line, blank line after the hunk",
			patch: "--- x\t2025-01-01\n+++ x\t2025-01-02\n@@ -1,2 +1,2 @@\n-a\n\n+b\n\n",
			want: []PatchedFile{{SourceFile: "x", TargetFile: "x", Hunks: []Hunk{
				{SourceStart: 1, SourceLength: 2, TargetStart: 1, TargetLength: 2, Lines: []string{"-a\n", " \n", "+b\n", "\n"}},
			}}},
		},
		{
			name:  "binary files",
			patch: "diff --git a/i.png b/i.png\nindex 1..2\nGIT binary patch\nliteral 1\nA\n\nBinary files a/j and b/j differ\n",
			want:  []PatchedFile{{SourceFile: "a/i.png", TargetFile: "b/i.png", Binary: true}, {SourceFile: "a/j", TargetFile: "b/j", Binary: true}},
		},
		{name: "empty", patch: "", want: []PatchedFile{}},
		{name: "prose only", patch: "no diff here\n-- \nsignature\n", want: []PatchedFile{}},
	}
	for _, tt := range tests {
		got, err := ParsePatch(tt.patch)
		if err != nil {
			t.Errorf("%s: ParsePatch: %v", tt.name, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: ParsePatch(%q) mismatch (-want +got):\n%s", tt.name, tt.patch, diff)
		}
	}
}

func TestHunkStringAndPath(t *testing.T) {
	files, err := ParsePatch("diff --git a/old b/new\nrename from old\nrename to new\n--- a/old\n+++ b/new\n@@ -3 +3 @@   ctx\n-x\n+y\n")
	if err != nil || len(files) != 1 {
		t.Fatalf("ParsePatch = %v, %v", files, err)
	}
	f := files[0]
	if got, want := f.Hunks[0].String(), "@@ -3,1 +3,1 @@   ctx\n-x\n+y\n"; got != want {
		t.Errorf("Hunk.String() = %q, want %q", got, want)
	}
	if !f.IsRename() || f.Path() != "new" {
		t.Errorf("IsRename() = %v, Path() = %q; want true, %q", f.IsRename(), f.Path(), "new")
	}
}

func TestParsePatchErrors(t *testing.T) {
	tests := []struct {
		patch   string
		wantErr error
		msg     string
	}{
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\n+b\n", ErrPatch, "shorter than its header says"},
		{"--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n-b\n", ErrPatch, "longer than its header says"},
		{"--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n-a\ndiff --git a/y b/y\n", ErrPatch, "hunk line expected"},
		{"@@ -1 +1 @@\n-a\n+b\n", ErrPatch, "hunk outside a file"},
		{"+++ b/x\n", ErrPatch, "before any --- line"},
		{"new file mode 100644\n", ErrPatch, "unexpected"},
		{"diff --git a/x b/x\n\n", ErrPatch, "blank line before any hunk"},
		{"diff --git a/x b/x\n--- a/x\n+++ b/y\n", ErrPatch, "target without source"},
		{"GIT binary patch\n", ErrPatchCrash, "outside a file"},
	}
	for _, tt := range tests {
		_, err := ParsePatch(tt.patch)
		if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("ParsePatch(%q) error = %v, want %v containing %q", tt.patch, err, tt.wantErr, tt.msg)
		}
	}
}
