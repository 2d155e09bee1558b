package episode

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/sandbox"
)

// TestToolPathsStayInside is the escape suite's row for the agent's file
// tools: view, edit, create and submit given paths that climb out with
// ".." or go through symlinks the agent planted must act inside the
// sandbox only. The control: the host file they aim at is there to read
// and its directory to write.
func TestToolPathsStayInside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	secret := filepath.Join(dir, "secret.py")
	const content = "TOKEN = 's3cret'\n"
	if err := os.WriteFile(secret, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(secret); err != nil || string(b) != content {
		t.Fatalf("control: the host file is not readable: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "control"), nil, 0o644); err != nil {
		t.Fatalf("control: the host directory is not writable: %v", err)
	}
	os.Remove(filepath.Join(dir, "control"))
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	s, err := rt.New(ctx, sandbox.Config{Workdir: "/tmp"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	tb, err := NewToolbox(ctx, s, "/tmp", 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer tb.Close()
	if obs, err := tb.Bash(ctx, "ln -s "+secret+" /tmp/link.py; ln -s "+dir+" /tmp/hostdir; ln -s / /tmp/root; cd /tmp"); err != nil || !obs.OK {
		t.Fatalf("plant links: %+v %v", obs, err)
	}
	up := strings.Repeat("../", 8)
	for _, p := range []string{secret, "/tmp/link.py", up + secret[1:], "/tmp/root" + secret, "/tmp/hostdir/secret.py", "/proc/1/root" + secret} {
		if obs, err := tb.View(ctx, p, 0, 0); err != nil || strings.Contains(obs.Text, "s3cret") {
			t.Errorf("view %s: %v, shows %q", p, err, obs.Text)
		}
		if _, err := tb.Edit(ctx, p, "TOKEN = 's3cret'", "TOKEN = 'stolen'"); err != nil {
			t.Errorf("edit %s: %v", p, err)
		}
		if obs, err := tb.Submit(ctx, p); err != nil || strings.Contains(obs.Text, "s3cret") {
			t.Errorf("submit %s: %v, shows %q", p, err, obs.Text)
		}
	}
	for _, p := range []string{"/tmp/hostdir/new.py", up + dir[1:] + "/new.py", "/tmp/root" + dir + "/new.py"} {
		if _, err := tb.Create(ctx, p, "x = 1\n"); err != nil {
			t.Errorf("create %s: %v", p, err)
		}
	}
	if b, _ := os.ReadFile(secret); string(b) != content {
		t.Errorf("the host file was changed through the tools: %q", b)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("the tools made files in the host directory: %v", ents)
	}
}
