package env_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/env/envtest"
	"cwm/internal/sandbox"
)

// TestDerive: an environment derived from a sandbox's upper layer shows
// its parent with the upper's changes laid over (a file rewritten, one
// removed, a directory replaced, one added), opens like any environment,
// leaves the parent's layer as it was (its files are hard-linked, never
// written through), and is found again rather than made twice.
func TestDerive(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	home := t.TempDir()
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: home})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	layer := filepath.Join(t.TempDir(), "layer")
	for name, body := range map[string]string{"repo/a.txt": "one\n", "repo/gone.txt": "gone\n", "repo/dir/old.txt": "old\n", "repo/dir/keep/k.txt": "k\n"} {
		os.MkdirAll(filepath.Join(layer, filepath.Dir(name)), 0o755)
		if err := os.WriteFile(filepath.Join(layer, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	parent := envtest.Put(t, home, "parent0000000000", layer)
	sbs := env.NewSandboxes(rt)
	run := func(e *env.Env, script string) string {
		t.Helper()
		sb, err := sbs.Open(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		defer sb.Close()
		res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", script}, Timeout: time.Minute, Capture: 1 << 16})
		if err != nil || !res.Success() {
			t.Fatalf("%s: %v %s %s", script, err, res.Describe(), res.Stderr)
		}
		return string(res.Stdout)
	}
	const show = `cd /repo && for f in $(find . -type f | sort); do echo "$f: $(cat $f)"; done`
	sb, err := sbs.Open(ctx, parent)
	if err != nil {
		t.Fatal(err)
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", `cd /repo && echo two > a.txt && rm gone.txt && rm -r dir && mkdir -p dir && echo new > dir/new.txt && echo added > added.txt`}, Timeout: time.Minute})
	if err != nil || !res.Success() {
		t.Fatalf("change the parent's files: %v %s", err, res.Describe())
	}
	upper := filepath.Join(t.TempDir(), "upper")
	if err := sb.Snapshot(upper); err != nil {
		t.Fatal(err)
	}
	sb.Close()

	st := env.NewStore(home)
	spec := env.DeriveSpec{Key: "instance-1 abc", Name: "instance-1", Commit: "abc", Install: []env.Step{{Command: "pip install -e ."}}}
	d, err := st.Derive(ctx, parent, upper, spec)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := run(d, show), "./a.txt: two\n./added.txt: added\n./dir/new.txt: new\n"; got != want {
		t.Errorf("derived environment's repository:\n%s\nwant:\n%s", got, want)
	}
	if got, want := run(parent, show), "./a.txt: one\n./dir/keep/k.txt: k\n./dir/old.txt: old\n./gone.txt: gone\n"; got != want {
		t.Errorf("the parent's repository after the derivation:\n%s\nwant it as it was:\n%s", got, want)
	}
	if d.ID == parent.ID || d.Commit != "abc" || d.Name != "instance-1" || len(d.Install) != 1 || !d.Usable {
		t.Errorf("derived manifest: id %s commit %q name %q install %v usable %v", d.ID, d.Commit, d.Name, d.Install, d.Usable)
	}
	again, err := st.Derive(ctx, parent, filepath.Join(t.TempDir(), "no-such-upper"), spec)
	if err != nil || again.ID != d.ID {
		t.Errorf("a second Derive with the same key = %v, %v; want the stored %s found, not made again", again, err, d.ID)
	}
	if other, err := st.Derive(ctx, parent, filepath.Join(t.TempDir(), "no-such-upper"), env.DeriveSpec{Key: "other"}); err == nil {
		t.Errorf("Derive from a missing upper = %s, want an error", other.ID)
	}
	left, _ := filepath.Glob(filepath.Join(st.Dir(), ".build-*"))
	if len(left) != 0 {
		t.Errorf("a failed derivation left %v in the store", left)
	}
}
