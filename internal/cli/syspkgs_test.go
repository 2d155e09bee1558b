package cli

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/base/basetest"
	"cwm/internal/egress/indextest"
	"cwm/internal/env"
	"cwm/internal/envbuild"
)

// syspkgRepo is a repository whose install step compiles against a
// system library's header (yaml.h, of Debian's libyaml-dev), failing as a
// C compiler does without it, and whose test needs what the step built.
var syspkgRepo = map[string]string{
	"build.sh": `if ! test -f /usr/include/yaml.h; then
	echo "ext/_yaml.c:1:10: fatal error: yaml.h: No such file or directory" >&2
	echo "compilation terminated." >&2
	exit 1
fi
echo built > built.txt
`,
	"test_built.py": `import os
import unittest


class TestBuilt(unittest.TestCase):
    def test_built(self):
        self.assertTrue(os.path.exists(os.path.join(os.path.dirname(__file__), "built.txt")))
`,
}

// TestSystemPackages builds a repository whose install step lacks a
// system library's header on the plain Debian bookworm base: with
// --system-packages=false the build keeps the failure, its note naming
// the Debian package; by default it goes on to the store's bookworm base
// with libyaml-dev (derived bases are found by suite, mirror and package
// set) and is usable there, its provenance saying why; built again, it is
// found there at once.
func TestSystemPackages(t *testing.T) {
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	pip, err := envbuild.EnsurePip(context.Background(), filepath.Join(cache, "cwm-test"), "")
	if err != nil {
		t.Fatalf("the pip wheel of online builds: %v", err)
	}
	plain := basetest.Debian(t, "bookworm")
	yaml := basetest.Debian(t, "bookworm", "libyaml-dev")
	ix := indextest.Start(t, indextest.Wheel{Name: "cwmdep", Version: "1.0"})
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	t.Setenv("PIP_INDEX_URL", ix.URL)
	basetest.Link(t, plain, home)
	basetest.Link(t, yaml, home)
	linkPip(t, pip, home)
	repo := writeRepo(t, syspkgRepo)
	build := func(want int, extra ...string) (*env.Env, string) {
		t.Helper()
		args := append([]string{"env", "build", "--portable", "--allow-host", ix.Addr, "--exclude-newer", "none", "--no-coverage", "--runs", "1",
			"--install", "sh build.sh", "--test", "python -m unittest -v"}, extra...)
		code, out, errOut := runCLI(t, "", append(args, repo)...)
		if code != want {
			t.Fatalf("env build %s = %d, want %d\n%s%s", strings.Join(extra, " "), code, want, out, errOut)
		}
		got, err := env.NewStore(home).Resolve(strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]))
		if err != nil {
			t.Fatalf("env build %s printed %q: %v\n%s", strings.Join(extra, " "), out, err, errOut)
		}
		return got, errOut
	}

	kept, _ := build(1, "--system-packages=false") // not usable: exit 1
	if kept.Usable || kept.Base != plain.Digest {
		t.Fatalf("with --system-packages=false: usable %v on %s; want unusable on the plain base %s", kept.Usable, kept.Base, plain.Digest)
	}
	if want := "it needs the Debian packages libyaml-dev"; !strings.Contains(kept.Reason, want) {
		t.Errorf("reason %q does not say %q", kept.Reason, want)
	}

	got, progress := build(0)
	if !got.Usable || got.Base != yaml.Digest {
		t.Fatalf("by default: usable %v (%s) on %s; want usable on the base with libyaml-dev %s\n%s", got.Usable, got.Reason, got.Base, yaml.Digest, progress)
	}
	if want := "system packages: the install needs libyaml-dev"; !strings.Contains(progress, want) {
		t.Errorf("progress does not say %q:\n%s", want, progress)
	}
	// Built again: found on the derived base, the failing install not
	// repeated.
	again, progress := build(0)
	if again.ID != got.ID || !strings.Contains(progress, "already built: "+got.ID+", on "+yaml.Digest) || strings.Contains(progress, "sh build.sh") {
		t.Errorf("built again: %s, want %s found on the derived base without installing\n%s", again.ID, got.ID, progress)
	}
	if got.PythonFrom == nil || !strings.Contains(got.PythonFrom.Note, "derived from "+plain.Short()) || !strings.Contains(got.PythonFrom.Note, "libyaml-dev") {
		t.Errorf("provenance %+v does not say the base was derived for libyaml-dev", got.PythonFrom)
	}
}
