package envbuild

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"cwm/internal/env"
)

// TestBuildHistory walks a four-commit history for two usable environments:
// the head, then the older half, where the first commit tried is broken
// (its only test fails with either recipe) and the one before it is kept.
func TestBuildHistory(t *testing.T) {
	src := writeTree(t, map[string]string{"calc.py": "def add(a, b):\n    return a + b\n",
		"test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n"})
	gitIn(t, src, "init", "-q")
	commit := func(msg, body string) string {
		os.WriteFile(filepath.Join(src, "calc.py"), []byte(body), 0o644)
		gitIn(t, src, "add", "-A")
		gitIn(t, src, "commit", "-qm", msg, "--allow-empty")
		return gitIn(t, src, "rev-parse", "HEAD")
	}
	good := "def add(a, b):\n    return a + b\n"
	c1 := commit("one", good)
	c2 := commit("two: broken", "def add(a, b):\n    return a - b\n")
	commit("three", good+"\n# three\n")
	commit("four", good+"\n# four\n")

	opts := buildOpts(src)
	head := mustBuild(t, opts)
	got, err := BuildHistory(context.Background(), testSandboxes, head, opts, 4, 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 {
		t.Fatalf("BuildHistory tried %d commits, want 3: %+v", len(got), got)
	}
	want := []struct {
		commit string
		usable bool
	}{{head.Commit, true}, {c2, false}, {c1, true}}
	for i, w := range want {
		if got[i].Commit != w.commit || got[i].Usable != w.usable || got[i].Kept != w.usable {
			t.Errorf("outcome %d = %s usable %v kept %v, want %s usable %v", i, got[i].Commit, got[i].Usable, got[i].Kept, w.commit, w.usable)
		}
	}
	if got[2].Recipe != "head" || got[1].Reason == "" {
		t.Errorf("outcomes: recipe %q for the kept commit, reason %q for the broken one", got[2].Recipe, got[1].Reason)
	}
	if e := openStoreEnv(t, got[2].EnvID); e == nil || e.Test.Provenance != "recipe of "+short(head.Commit) {
		t.Errorf("kept environment's test provenance = %+v", e)
	}
	// The older builds came last, yet the head's name still names the
	// head; each older one has a name of its own.
	st := env.NewStore(testHome)
	if e, err := st.Resolve(head.Name); err != nil || e.ID != head.ID {
		t.Errorf("Resolve(%q) = %v, %v; want the head %s, not an older commit's build", head.Name, e, err, head.ID)
	}
	if e, err := st.Resolve(head.Name + "@" + c1[:12]); err != nil || e.ID != got[2].EnvID {
		t.Errorf("Resolve(NAME@%s) = %v, %v; want the kept older build %s", c1[:12], e, err, got[2].EnvID)
	}
}

func openStoreEnv(t *testing.T, id string) *env.Env {
	t.Helper()
	return env.NewStore(testHome).Get(id)
}
