package sandbox

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// state lists a few paths' contents as the sandbox's commands see them
// ("-" for a missing file).
func state(t *testing.T, s *Sandbox) string {
	t.Helper()
	r := sh(t, s, `for f in /tmp/a /tmp/b /tmp/d/x /srv/file /srv/dir/old; do if [ -e $f ]; then printf '%s=%s ' $f "$(cat $f)"; else printf '%s=- ' $f; fi; done`)
	return strings.TrimSpace(string(r.Stdout))
}

func TestCheckpointRollbackBranch(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Layers: []string{baseLayer(t)}})
	ctx := context.Background()
	base := state(t, s)

	sh(t, s, "echo 1 > /tmp/a; mkdir /tmp/d; echo x1 > /tmp/d/x")
	c1, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Release()
	at1 := state(t, s)
	if c1.Depth() != 1 || c1.Bytes() <= 0 {
		t.Errorf("first checkpoint: depth %d bytes %d, want 1 and > 0", c1.Depth(), c1.Bytes())
	}
	// After a checkpoint the sandbox goes on with its files as they were,
	// and writes, deletions and new files land in the fresh upper layer.
	sh(t, s, "echo 2 > /tmp/a; echo b > /tmp/b; rm -r /tmp/d /srv/dir; rm /srv/file")
	at2 := state(t, s)
	c2, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Release()
	if c2.Depth() != 2 {
		t.Errorf("second checkpoint: depth %d, want 2", c2.Depth())
	}
	// A checkpoint with nothing written since the last adds no layer.
	c3, err := s.Checkpoint(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if c3.Depth() != 2 {
		t.Errorf("checkpoint with nothing new: depth %d, want 2", c3.Depth())
	}
	c3.Release()
	sh(t, s, "echo 3 > /tmp/a")
	// A clone of a sandbox on frozen layers copies its upper layer alone
	// and shares the layers under it; the sandbox's commands live on.
	shell, err := s.Shell(ctx, ShellOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer shell.Close()
	if _, err := shell.Run(ctx, "export KEPT=yes", 0); err != nil {
		t.Fatal(err)
	}
	cl, err := s.Clone(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(state(t, s), state(t, cl)); diff != "" {
		t.Errorf("clone of a sandbox on frozen layers (-want +got):\n%s", diff)
	}
	cl.Close()
	if r, err := shell.Run(ctx, "echo $KEPT", 0); err != nil || r.Restarted || r.Output != "yes\n" {
		t.Errorf("the sandbox's shell after a clone: %+v, %v, want it alive with its variable", r, err)
	}

	b, err := s.Branch(ctx, c1)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(at1, state(t, b)); diff != "" {
		t.Errorf("branch from checkpoint 1 (-want +got):\n%s", diff)
	}
	sh(t, b, "echo branch > /tmp/a")
	if err := s.Rollback(ctx, c1); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(at1, state(t, s)); diff != "" {
		t.Errorf("rollback to checkpoint 1 (-want +got):\n%s", diff)
	}
	if err := s.Rollback(ctx, c2); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(at2, state(t, s)); diff != "" {
		t.Errorf("rollback to checkpoint 2 (-want +got):\n%s", diff)
	}
	if got := state(t, b); !strings.Contains(got, "/tmp/a=branch") {
		t.Errorf("branch after the rollbacks = %q, want its own write kept", got)
	}
	if err := s.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(base, state(t, s)); diff != "" {
		t.Errorf("reset after checkpoints (-want +got):\n%s", diff)
	}
	if _, err := s.Changes(); err != nil {
		t.Errorf("Changes after reset: %v", err)
	}
	// Layers are freed when no checkpoint or sandbox stands on them.
	if n := rt.LayerCount(); n != 2 {
		t.Errorf("layers held = %d, want 2", n)
	}
	b.Close()
	c1.Release()
	if n := rt.LayerCount(); n != 2 {
		t.Errorf("layers held after checkpoint 1 and its branch went = %d, want 2 (checkpoint 2 stands on both)", n)
	}
	c2.Release()
	if n := rt.LayerCount(); n != 0 {
		t.Errorf("layers held after every checkpoint went = %d, want 0", n)
	}
	if ents, _ := os.ReadDir(filepath.Join(rt.dir, "frozen")); len(ents) != 0 {
		t.Errorf("frozen layer mounts left: %d", len(ents))
	}
}

// baseLayer is a read-only layer with a file and a directory of files.
func baseLayer(t *testing.T) string {
	layer := t.TempDir()
	os.MkdirAll(filepath.Join(layer, "srv/dir"), 0o755)
	os.WriteFile(filepath.Join(layer, "srv/file"), []byte("base"), 0o644)
	os.WriteFile(filepath.Join(layer, "srv/dir/old"), []byte("old"), 0o644)
	return layer
}

func TestCheckpointCompaction(t *testing.T) {
	rt := newRuntime(t, Options{})
	s := newSandbox(t, rt, Config{Workdir: "/tmp", Layers: []string{baseLayer(t)}})
	ctx := context.Background()
	sh(t, s, "mkdir -p /tmp/d && echo keep > /tmp/d/keep && rm /srv/file")
	var last *Checkpoint
	for i := range CompactDepth + 1 {
		// Each layer changes something: a file rewritten, a directory
		// deleted and made again (opaque), a file of the base deleted.
		switch i {
		case 3:
			sh(t, s, "rm -r /srv/dir && mkdir /srv/dir && echo new > /srv/dir/new")
		case 5:
			sh(t, s, "echo restored > /srv/file")
		case 7:
			sh(t, s, "rm /srv/file")
		}
		sh(t, s, "echo "+strings.Repeat("v", i+1)+" > /tmp/a")
		c, err := s.Checkpoint(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if last != nil {
			last.Release()
		}
		last = c
	}
	defer last.Release()
	if last.Depth() != 1 {
		t.Errorf("checkpoint %d: depth %d, want 1 (compacted)", CompactDepth+1, last.Depth())
	}
	const show = `printf 'a=%s keep=%s dir=%s file=%s' "$(cat /tmp/a)" "$(cat /tmp/d/keep)" "$(ls /srv/dir)" "$(cat /srv/file 2>/dev/null || echo -)"`
	want := "a=" + strings.Repeat("v", CompactDepth+1) + " keep=keep dir=new file=-"
	got := strings.TrimSpace(string(sh(t, s, show).Stdout))
	if got != want {
		t.Errorf("after compaction = %q, want %q", got, want)
	}
	b, err := s.Branch(ctx, last)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	got = strings.TrimSpace(string(sh(t, b, show).Stdout))
	if got != want {
		t.Errorf("branch of the compacted checkpoint = %q, want %q", got, want)
	}
}

// TestReapFrozenLayers shows that the start-up reaper unmounts the frozen
// layers a dead cwm left.
func TestReapFrozenLayers(t *testing.T) {
	home := t.TempDir()
	rt := newRuntime(t, Options{Home: home})
	s := newSandbox(t, rt, Config{})
	sh(t, s, "echo 1 > /tmp/a")
	c, err := s.Checkpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	mnt := filepath.Join(rt.dir, "frozen", c.Layers()[0])
	// A crash: the run directory's lock is gone with its process, the
	// mounts stay.
	rt.lock.Close()
	if err := Reap(filepath.Join(home, "run"), slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(mnt); !os.IsNotExist(err) {
		t.Errorf("frozen layer %s after Reap: %v, want gone", mnt, err)
	}
}
