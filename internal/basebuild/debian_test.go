package basebuild_test

import (
	"context"
	"strings"
	"testing"

	"cwm/internal/base"
	"cwm/internal/base/basetest"
	"cwm/internal/sandbox"
)

// TestDebianBookworm builds (once per machine) the Debian bookworm base
// and runs its Python in a sandbox on it: 3.11, and a venv with pip.
func TestDebianBookworm(t *testing.T) {
	b := basetest.Debian(t, "bookworm")
	py, err := b.Python()
	if err != nil {
		t.Fatal(err)
	}
	if py.MinorVersion() != "3.11" || py.Path != "/usr/bin/python3" {
		t.Errorf("Python() of Debian bookworm = %+v, want /usr/bin/python3 3.11", py)
	}
	if b.Source.Kind != base.KindDebian || b.Source.Suite != "bookworm" || !strings.HasPrefix(b.Source.Tool, "mmdebstrap") && !strings.HasPrefix(b.Source.Tool, "debootstrap") {
		t.Errorf("source of the Debian base = %+v", b.Source)
	}
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := context.Background()
	sb, err := rt.New(ctx, b.SandboxConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	for _, c := range []struct {
		cmd, want string
	}{
		{"python3 --version", "Python 3.11."},
		{"/usr/bin/python3 -m venv /tmp/v && /tmp/v/bin/python -m pip --version", "pip "},
		{"git --version", "git version"},
		{"getent hosts localhost", "localhost"},
	} {
		res, err := sb.Exec(ctx, sandbox.Cmd{Shell: c.cmd})
		if err != nil || !res.Success() || !strings.Contains(string(res.Stdout), c.want) {
			t.Errorf("%s in a sandbox on the base = %q, %q, %v; want %q", c.cmd, res.Stdout, res.Stderr, err, c.want)
		}
	}
}
