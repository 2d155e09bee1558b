package envbuild

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

var (
	pipOnce sync.Once
	pipPath string
	pipErr  error
)

// testPipWheel is the pip wheel online builds run, fetched once (with the
// host's pip and its index configuration) into the user's cache, where
// later test runs find it with its digest checked: the one thing the
// online tests take from outside the machine, as the bases are.
func testPipWheel(t testing.TB) string {
	t.Helper()
	pipOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			pipErr = err
			return
		}
		pipPath, pipErr = EnsurePip(context.Background(), filepath.Join(cache, "cwm-test"), "")
	})
	if pipErr != nil {
		t.Fatalf("the pip wheel of online builds: %v", pipErr)
	}
	return pipPath
}

// writeWheels builds wheels into a new directory (a wheelhouse) and
// returns it with each wheel's file name.
func writeWheels(t testing.TB, wheels ...indextest.Wheel) (string, []string) {
	t.Helper()
	dir := t.TempDir()
	var names []string
	for _, w := range wheels {
		name, data, err := indextest.Build(w)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	return dir, names
}

// depRepo is a repository whose tests need cwmdep (at version 1.0),
// which only the test's wheels or index have.
func depRepo(t *testing.T, req string) string {
	t.Helper()
	return writeTree(t, map[string]string{
		"requirements.txt": req + "\n",
		"test_dep.py": `import unittest

import cwmdep


class TestDep(unittest.TestCase):
    def test_version(self):
        self.assertEqual(cwmdep.__version__, "1.0")
`,
	})
}

func onlineOpts(t testing.TB, src string) Options {
	o := buildOpts(src)
	o.PipWheel = testPipWheel(t)
	return o
}

// TestWheelhouse: a build from staged wheels, with no network at all,
// installs the repository's dependency into a venv without the host's
// packages and records the lock; --locked rebuilds the same set, and
// fails naming a wheel whose bytes changed; a wheelhouse without the
// wheel fails naming it.
func TestWheelhouse(t *testing.T) {
	house, names := writeWheels(t, indextest.Wheel{Name: "cwmdep", Version: "1.0", Requires: []string{"cwmbase>=2"}},
		indextest.Wheel{Name: "cwmbase", Version: "2.1"})
	repo := depRepo(t, "cwmdep==1.0")
	opts := onlineOpts(t, repo)
	opts.Wheelhouse = house
	start := time.Now()
	e := mustBuild(t, opts)
	cold := time.Since(start)
	if !e.Usable || e.Mode != env.ModeWheelhouse {
		t.Fatalf("Build(--wheelhouse) = usable %v, mode %q (%s); want usable, wheelhouse", e.Usable, e.Mode, e.Reason)
	}
	if e.Install[0].Command != venvStepOnline.Command {
		t.Errorf("Build(--wheelhouse) venv step = %q, want %q", e.Install[0].Command, venvStepOnline.Command)
	}
	var got []string
	for _, p := range e.Lock {
		if p.SHA256 == "" || !strings.HasPrefix(p.URL, "file://"+toolsWheels+"/") {
			t.Errorf("lock entry %+v: want a sha256 and a wheelhouse URL", p)
		}
		got = append(got, p.Name+"=="+p.Version)
	}
	if strings.Join(got, " ") != "cwmbase==2.1 cwmdep==1.0" && strings.Join(got, " ") != "cwmdep==1.0 cwmbase==2.1" {
		t.Errorf("lock = %v, want cwmdep==1.0 and cwmbase==2.1", got)
	}
	if _, err := os.Stat(filepath.Join(e.LayerDir(), toolsLayerDir)); !os.IsNotExist(err) {
		t.Errorf("the layer keeps the build's tools (%v)", err)
	}
	if _, err := os.Stat(filepath.Join(e.LayerDir(), "venv", "lib", "python3.11", "site-packages", "pip")); !os.IsNotExist(err) {
		t.Errorf("the layer holds a pip of its own (%v)", err)
	}

	// The lock again, hashes required: the same set, with a new id.
	locked := opts
	locked.Lock = e.Lock
	start = time.Now()
	again := mustBuild(t, locked)
	warm := time.Since(start)
	t.Logf("cold build %v, rebuild from the lock %v", cold.Round(time.Millisecond), warm.Round(time.Millisecond))
	if !again.Usable || !again.Locked || again.ID == e.ID {
		t.Errorf("Build(--locked) = usable %v, locked %v, id %s (first %s); want usable, locked, another id", again.Usable, again.Locked, again.ID, e.ID)
	}
	if env.LockRequirements(again.Lock) != env.LockRequirements(e.Lock) {
		t.Errorf("Build(--locked) lock:\n%s\nwant:\n%s", env.LockRequirements(again.Lock), env.LockRequirements(e.Lock))
	}

	// A wheel changed since: the build fails, naming it.
	if err := os.WriteFile(filepath.Join(house, names[0]), append(readFile(t, filepath.Join(house, names[0])), 0), 0o644); err != nil {
		t.Fatal(err)
	}
	locked.Force = true
	bad, err := Build(context.Background(), testSandboxes, locked)
	if err == nil || !strings.Contains(err.Error(), "cwmdep==1.0 does not match its hash") {
		t.Errorf("Build(--locked, a tampered wheel) = %v, want the lock's cwmdep==1.0 named", err)
		if bad != nil {
			t.Logf("%+v\n%s", bad.Install, readFile(t, bad.File(env.BuildLog)))
		}
	}

	// A wheelhouse without the wheel: the environment is not usable, and
	// its reason names what was missing.
	os.Remove(filepath.Join(house, names[0]))
	opts.Force = true
	e = mustBuild(t, opts)
	if e.Usable || !strings.Contains(e.Reason, "cwmdep") {
		t.Errorf("Build(--wheelhouse without cwmdep) = usable %v, reason %q; want unusable naming cwmdep", e.Usable, e.Reason)
	}
}

func readFile(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
