package envbuild

import (
	"context"
	"net"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/egress"
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
	// A line bash runs as written: its python -m pip is the build's pip.
	opts.Install = []string{"cat requirements.txt | python -m pip install -r /dev/stdin"}
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

// indexPolicy is a relay policy that allows the test's loopback index,
// as --allow-host IP:PORT does, and points pip at it. The index's files
// come without caching headers (as through this machine's proxy), so pip's
// own HTTP cache keeps nothing: the wheel cache is filled from the pip
// launcher's copies.
func indexPolicy(t testing.TB, ix *indextest.Index) *egress.Policy {
	t.Helper()
	allow, err := egress.ParseAllowHost(ix.Addr)
	if err != nil {
		t.Fatal(err)
	}
	p := egress.Policy{IndexURL: ix.URL}
	p.Allow(allow)
	return &p
}

// TestOnlineIndex: a repository whose dependency only the (loopback)
// index has builds usable online through the relay, with the lock
// naming the index's files and digests; --exclude-newer takes the older
// of two releases by upload time; the lock rebuilt with --locked
// installs the same set; a requirement the index lacks is a missing
// dependency named in the reason.
func TestOnlineIndex(t *testing.T) {
	old := time.Date(2021, 3, 1, 0, 0, 0, 0, time.UTC)
	ix := indextest.Start(t,
		indextest.Wheel{Name: "cwmdep", Version: "1.0", Requires: []string{"cwmbase"}, Uploaded: old},
		indextest.Wheel{Name: "cwmdep", Version: "2.0", Requires: []string{"cwmbase"}, Uploaded: old.AddDate(2, 0, 0),
			Module: "__version__ = '2.0'\n"},
		indextest.Wheel{Name: "cwmbase", Version: "3.0", Uploaded: old})
	repo := depRepo(t, "cwmdep")
	opts := onlineOpts(t, repo)
	opts.Mode, opts.Egress = env.ModeOnline, indexPolicy(t, ix)
	opts.ExcludeNewer = "2022-01-01"
	start := time.Now()
	e := mustBuild(t, opts)
	cold := time.Since(start)
	if !e.Usable || e.Mode != env.ModeOnline || e.ExcludeNewer != "2022-01-01T00:00:00Z" {
		t.Fatalf("Build(online) = usable %v, mode %q, exclude-newer %q (%s); want usable, online, 2022-01-01T00:00:00Z", e.Usable, e.Mode, e.ExcludeNewer, e.Reason)
	}
	if e.PythonFrom == nil || e.PythonFrom.Base != "host" {
		t.Errorf("Build(online) python provenance = %+v, want the host's", e.PythonFrom)
	}
	want := map[string]string{"cwmdep": "1.0", "cwmbase": "3.0"}
	for _, p := range e.Lock {
		if want[p.Name] != p.Version || p.SHA256 == "" || !strings.HasPrefix(p.URL, strings.TrimSuffix(opts.Egress.IndexURL, "simple")+"files/") {
			t.Errorf("lock entry %+v: want %s %s from the index with a sha256", p, p.Name, want[p.Name])
		}
	}
	if len(e.Lock) != len(want) {
		t.Errorf("lock = %+v, want %v", e.Lock, want)
	}

	// Without the bound, the newer release (whose version the test
	// rejects: the repository's commit was made for 1.0).
	newer := opts
	newer.ExcludeNewer = "none"
	if e2 := mustBuild(t, newer); e2.Usable || e2.ID == e.ID {
		t.Errorf("Build(--exclude-newer none) = usable %v, id %s; want cwmdep 2.0 installed (unusable), another id", e2.Usable, e2.ID)
	}

	// The lock again: the same set, hashes required, and a rebuild from
	// it timed against the cold build.
	locked := opts
	locked.Lock = e.Lock
	start = time.Now()
	again := mustBuild(t, locked)
	warm := time.Since(start)
	t.Logf("cold online build %v, rebuild from the lock %v (%.2fx)", cold.Round(time.Millisecond), warm.Round(time.Millisecond), warm.Seconds()/cold.Seconds())
	if !again.Usable || env.LockRequirements(again.Lock) != env.LockRequirements(e.Lock) {
		t.Errorf("Build(--locked) = usable %v, lock\n%s\nwant\n%s", again.Usable, env.LockRequirements(again.Lock), env.LockRequirements(e.Lock))
	}
	// Its files came from the wheel cache the first build filled, not
	// from the index (linked from their unpacked trees).
	log := string(readFile(t, again.File(env.BuildLog)))
	for _, p := range e.Lock {
		if !strings.Contains(log, "linked "+p.Name+"=="+p.Version+" (sha256 "+p.SHA256+")") {
			t.Errorf("Build(--locked) did not install %s from the wheel cache:\n%s", path.Base(p.URL), log)
		}
		if _, err := os.Stat(filepath.Join(wheelCacheDir(opts.Home), p.SHA256, path.Base(p.URL))); err != nil {
			t.Errorf("wheel cache: %v", err)
		}
	}

	// A requirement the index does not have.
	missing := onlineOpts(t, depRepo(t, "cwmdep\nno-such-dist==1.0"))
	missing.Mode, missing.Egress, missing.ExcludeNewer = env.ModeOnline, opts.Egress, "none"
	e3 := mustBuild(t, missing)
	if !strings.Contains(e3.Reason, "no_such_dist") {
		t.Errorf("Build(a requirement the index lacks) reason = %q, want no-such-dist named", e3.Reason)
	}
}

// TestOnlineIndexUnreachable: an index that does not answer (the relay
// allows it, and nothing listens there) fails the install step with a
// note that says so.
func TestOnlineIndexUnreachable(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	allow, err := egress.ParseAllowHost(addr)
	if err != nil {
		t.Fatal(err)
	}
	p := egress.Policy{IndexURL: "http://" + addr + "/simple"}
	p.Allow(allow)
	opts := onlineOpts(t, depRepo(t, "cwmdep"))
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, &p, "none"
	opts.InstallTimeout = 3 * time.Minute
	e := mustBuild(t, opts)
	st := e.Install[len(e.Install)-1]
	if e.Usable || st.Status == "ok" || !strings.Contains(st.Note, "egress could not reach: "+addr) {
		t.Errorf("Build(an unreachable index) = usable %v, step %s %q, reason %q; want a step whose note names the unreachable index", e.Usable, st.Status, st.Note, e.Reason)
	}
	t.Logf("step: %s: %s; reason: %s", st.Status, st.Note, e.Reason)
}

// TestWheelhouseTestRunner: a repository tested with pytest that no
// install step installs gets pytest from the wheelhouse (here a stand-in
// wheel: the step and the lock are what is checked), since the venv has
// none of the base's packages.
func TestWheelhouseTestRunner(t *testing.T) {
	house, _ := writeWheels(t, indextest.Wheel{Name: "pytest", Version: "8.0"})
	opts := onlineOpts(t, writeTree(t, map[string]string{
		"pytest.ini":   "[pytest]\n",
		"test_core.py": "def test_one():\n    assert True\n",
	}))
	opts.Wheelhouse = house
	e := mustBuild(t, opts)
	last := e.Install[len(e.Install)-1]
	if last.Command != "pip install pytest" || last.Status != "ok" || !strings.HasPrefix(last.Provenance, "cwm (the test command runs pytest") {
		t.Errorf("last install step = %+v, want pytest installed by cwm", last)
	}
	if len(e.Lock) != 1 || e.Lock[0].Name != "pytest" {
		t.Errorf("lock = %+v, want pytest", e.Lock)
	}
}

// TestOnlineNoAllowedPython: a project whose requires-python no base
// (nor the host) satisfies fails before anything is installed, with the
// sentence that says so, not a pip error.
func TestOnlineNoAllowedPython(t *testing.T) {
	opts := buildOpts(writeTree(t, map[string]string{
		"pyproject.toml": "[project]\nname = \"future\"\nversion = \"1\"\nrequires-python = \">=3.14\"\n",
		"test_x.py":      "def test_x():\n    pass\n",
	}))
	opts.Mode = env.ModeOnline
	opts.Bases = []BasePython{{Ref: "bullseye", Python: "3.9.2", Root: "/nonexistent"}, {Ref: "trixie", Python: "3.13.5", Root: "/nonexistent"}}
	_, err := Build(context.Background(), testSandboxes, opts)
	want := `requires-python ">=3.14": no base offers an allowed Python (bases: 3.9 bullseye, 3.13 trixie, `
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), "build one with cwm base build --debian SUITE") {
		t.Errorf("Build(requires-python >=3.14) = %v, want %s... host); build one with cwm base build --debian SUITE", err, want)
	}
}

// TestOnlineWarningsAsErrors: a dependency whose source warns when it is
// compiled (an invalid escape sequence) imports in tests that make
// warnings errors (pytest's filterwarnings = error does so), as it does
// where pip compiled it at install: the build's warm-up compiles the venv
// (the install runs with --no-compile), warnings ignored, so the tests
// never compile it.
func TestOnlineWarningsAsErrors(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "cwmdep", Version: "1.0",
		Module: "PATTERN = '\\*'\n__version__ = '1.0'\n"})
	repo := writeTree(t, map[string]string{
		"requirements.txt": "cwmdep\n",
		"test_dep.py": `import unittest
import warnings

warnings.simplefilter("error")
import cwmdep  # noqa: E402


class TestDep(unittest.TestCase):
    def test_version(self):
        self.assertEqual(cwmdep.__version__, "1.0")
`,
	})
	opts := onlineOpts(t, repo)
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, indexPolicy(t, ix), "none"
	e := mustBuild(t, opts)
	if !e.Usable || e.Counts.Pass != 1 {
		t.Errorf("Build(a dependency that warns, tests that make warnings errors) = usable %v, %+v (%s); want its test passing", e.Usable, e.Counts, e.Reason)
	}
}

// TestOnlineConfigTooling: coverage, which builds leave out as tooling,
// is installed where the repository's pytest configuration imports it (a
// filterwarnings category in coverage; aiohttp's "Failed to import filter
// module 'coverage'" otherwise), and left out where it does not. Stand-in
// wheels: the steps and the lock are what is checked.
func TestOnlineConfigTooling(t *testing.T) {
	house, _ := writeWheels(t, indextest.Wheel{Name: "pytest", Version: "8.0"},
		indextest.Wheel{Name: "coverage", Version: "7.0", Module: "class CoverageWarning(Warning):\n    pass\n"})
	for _, tt := range []struct {
		cfg  string
		want []string
	}{
		{"[tool:pytest]\nfilterwarnings =\n    error\n    ignore:Couldn't import C tracer:coverage.CoverageWarning\n", []string{"coverage", "pytest"}},
		{"[tool:pytest]\nfilterwarnings =\n    error\n    ignore::DeprecationWarning:coverage\n", []string{"pytest"}},
	} {
		opts := onlineOpts(t, writeTree(t, map[string]string{
			"setup.cfg":        tt.cfg,
			"requirements.txt": "coverage\n",
			"test_core.py":     "def test_one():\n    assert True\n",
		}))
		opts.Wheelhouse = house
		e := mustBuild(t, opts)
		var got []string
		for _, p := range e.Lock {
			got = append(got, p.Name)
		}
		sort.Strings(got)
		if strings.Join(got, " ") != strings.Join(tt.want, " ") {
			t.Errorf("Build(%q) locked %v, want %v; steps %+v", tt.cfg, got, tt.want, e.Install)
		}
	}
}
