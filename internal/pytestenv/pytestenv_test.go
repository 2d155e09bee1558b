package pytestenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/oncedir"
)

const tiny = "testdata/tiny.txt"

// childEnv marks a run of this test binary as one of the concurrent
// processes below.
const childEnv = "CWM_PYTESTENV_CHILD"

// TestMain lets the test binary be a process that ensures a venv and
// says whether it made it.
func TestMain(m *testing.M) {
	if dir := os.Getenv(childEnv); dir != "" {
		created, err := Ensure(context.Background(), dir, tiny)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Println("created:", created)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func offline(t *testing.T) {
	if os.Getenv(EnvOffline) == "1" {
		t.Skipf("%s=1: the package index is not reached", EnvOffline)
	}
}

// Processes that want the same venv at once make it once: one of them
// reports it made it, the others find it; it imports its package; a
// later call finds it too.
func TestConcurrentProcesses(t *testing.T) {
	offline(t)
	dir := filepath.Join(t.TempDir(), "tiny")
	const n = 3
	outs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), lockWait+time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), childEnv+"="+dir)
			b, err := cmd.CombinedOutput()
			outs[i], errs[i] = strings.TrimSpace(string(b)), err
		}()
	}
	wg.Wait()
	made := 0
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("process %d: %v: %s", i, errs[i], outs[i])
		}
		switch outs[i] {
		case "created: true":
			made++
		case "created: false":
		default:
			t.Errorf("process %d said %q", i, outs[i])
		}
	}
	if made != 1 {
		t.Errorf("%d processes made the venv, want 1: %q", made, outs)
	}
	out, err := exec.Command(filepath.Join(dir, "bin", "python"), "-c", "import idna; print(idna.__version__)").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "3.21" {
		t.Errorf("import idna in the venv = %q, %v; want 3.21", out, err)
	}
	if created, err := Ensure(context.Background(), dir, tiny); created || err != nil {
		t.Errorf("Ensure again = %v, %v; want the venv found", created, err)
	}
}

// A venv left half made (no completion mark) is made again; a pin whose
// hash does not match what the index serves is refused, and leaves no
// venv that a later run would take for complete.
func TestIncompleteAndBadHash(t *testing.T) {
	offline(t)
	tmp := t.TempDir()
	dir := filepath.Join(tmp, "half")
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "bin", "python"), []byte("junk"), 0o755)
	if created, err := Ensure(context.Background(), dir, tiny); !created || err != nil {
		t.Fatalf("Ensure over a half-made venv = %v, %v; want it made", created, err)
	}
	if !oncedir.Complete(dir) {
		t.Errorf("the remade venv is not marked complete")
	}

	b, err := os.ReadFile(tiny)
	if err != nil {
		t.Fatal(err)
	}
	i := strings.Index(string(b), "sha256:")
	bad := []byte(string(b[:i+7]) + strings.Repeat("0", 64) + string(b[i+7+64:]))
	badReq := filepath.Join(tmp, "bad.txt")
	if err := os.WriteFile(badReq, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	badDir := filepath.Join(tmp, "bad")
	_, err = Ensure(context.Background(), badDir, badReq)
	if err == nil {
		t.Fatalf("Ensure with a wrong hash succeeded")
	}
	if oncedir.Complete(badDir) {
		t.Errorf("a failed venv is marked complete")
	}
}

// The cache key follows the requirements' contents, not their path.
func TestDirKey(t *testing.T) {
	t.Setenv(EnvDir, "/cache")
	tmp := t.TempDir()
	write := func(name, s string) string {
		p := filepath.Join(tmp, name)
		os.WriteFile(p, []byte(s), 0o644)
		return p
	}
	a, _ := Dir(write("a.txt", "x==1\n"))
	a2, _ := Dir(write("sub-a.txt", "x==1\n"))
	b, _ := Dir(write("a2.txt", "x==2\n"))
	if !strings.HasPrefix(a, "/cache/a-") || strings.TrimPrefix(a, "/cache/a-") != strings.TrimPrefix(a2, "/cache/sub-a-") {
		t.Errorf("Dir of equal files = %s, %s; want one key", a, a2)
	}
	if strings.TrimPrefix(a, "/cache/a-") == strings.TrimPrefix(b, "/cache/a2-") {
		t.Errorf("Dir of different files = %s, %s; want two keys", a, b)
	}
	if _, err := Dir(filepath.Join(tmp, "missing.txt")); err == nil {
		t.Errorf("Dir of a missing file: no error")
	}
}
