package envbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/env"
)

// TestFetchSourceDamagedHistory: a source whose history lacks an object
// between the commit and its version tag (astropy's and moto's partial
// mirrors: "fatal: unable to read ..." from the fetch down to the tag)
// still gives the commit's tree, alone, with a note of what was lost; an
// undamaged source gives the history down to the tag and no note.
func TestFetchSourceDamagedHistory(t *testing.T) {
	src := t.TempDir()
	gitIn(t, src, "init", "-q")
	write := func(content string) {
		if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		gitIn(t, src, "add", "-A")
		gitIn(t, src, "commit", "-qm", content)
	}
	write("first\n")
	gitIn(t, src, "tag", "v1.0")
	write("lost on the way\n")
	lost := gitIn(t, src, "rev-parse", "HEAD:a.txt")
	write("head\n")
	head := gitIn(t, src, "rev-parse", "HEAD")

	fetch := func() (sourceInfo, string) {
		t.Helper()
		dst := filepath.Join(t.TempDir(), "repo")
		info, err := fetchSource(context.Background(), env.Source{Kind: "git", Location: src}, "", dst, t.TempDir())
		if err != nil {
			t.Fatalf("fetchSource: %v", err)
		}
		if info.Commit != head {
			t.Errorf("fetchSource commit = %s, want %s", info.Commit, head)
		}
		if got, err := os.ReadFile(filepath.Join(dst, "a.txt")); err != nil || string(got) != "head\n" {
			t.Errorf("a.txt in the copy = %q, %v; want the commit's", got, err)
		}
		return info, dst
	}
	info, dst := fetch()
	if info.Note != "" || gitIn(t, dst, "tag", "--list") != "v1.0" || gitIn(t, dst, "rev-list", "--count", "HEAD") != "3" {
		t.Errorf("whole source: note %q, tags %q, %s commits; want no note, v1.0, 3", info.Note,
			gitIn(t, dst, "tag", "--list"), gitIn(t, dst, "rev-list", "--count", "HEAD"))
	}

	if err := os.Remove(filepath.Join(src, ".git", "objects", lost[:2], lost[2:])); err != nil {
		t.Fatal(err)
	}
	info, dst = fetch()
	if !strings.Contains(info.Note, "tag v1.0 (2 commits) could not be copied") || !strings.Contains(info.Note, "without its version tag") {
		t.Errorf("damaged source: note = %q, want the tag and the loss named", info.Note)
	}
	if tags := gitIn(t, dst, "tag", "--list"); tags != "" {
		t.Errorf("damaged source: tags %q in the copy, want none", tags)
	}
	if n := gitIn(t, dst, "rev-list", "--count", "HEAD"); n != "1" {
		t.Errorf("damaged source: %s commits in the copy, want 1", n)
	}
}
