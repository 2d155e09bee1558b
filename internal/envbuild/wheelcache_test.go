package envbuild

import (
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

// cwmBackend is a PEP 517 build backend (editable and regular wheels of
// the one-module project cwmproj) that only the test's index serves, so
// that a project's isolated build must fetch it.
const cwmBackend = `import base64, hashlib, os, zipfile

def _wheel(directory, editable):
    dist = "cwmproj-0.1"
    files = {
        dist + ".dist-info/METADATA": "Metadata-Version: 2.1\nName: cwmproj\nVersion: 0.1\nRequires-Dist: cwmdep\n",
        dist + ".dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: cwmbackend\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    if editable:
        files["cwmproj.pth"] = os.getcwd() + "\n"
    else:
        files["cwmproj.py"] = open("cwmproj.py").read()
    record = ""
    for name, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        record += "%s,sha256=%s,%d\n" % (name, digest, len(text.encode()))
    files[dist + ".dist-info/RECORD"] = record + dist + ".dist-info/RECORD,,\n"
    name = dist + "-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, name), "w") as z:
        for f, text in files.items():
            z.writestr(f, text)
    return name

def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, False)

def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, True)
`

// backendProjectBuild builds, online from ix, the project cwmproj (one
// module, needing cwmdep) whose isolated build needs cwmbackend, with the
// test file given; it returns the options and the usable environment.
func backendProjectBuild(t *testing.T, ix *indextest.Index, testFile, testSrc string) (Options, *env.Env) {
	t.Helper()
	repo := writeTree(t, map[string]string{
		"pyproject.toml": "[build-system]\nrequires = [\"cwmbackend\"]\nbuild-backend = \"cwmbackend\"\n\n" +
			"[project]\nname = \"cwmproj\"\nversion = \"0.1\"\ndependencies = [\"cwmdep\"]\n",
		"cwmproj.py": "import cwmdep\n\nVERSION = cwmdep.__version__\n",
		testFile:     testSrc,
	})
	opts := onlineOpts(t, repo)
	opts.Home, opts.Mode, opts.Egress, opts.ExcludeNewer = t.TempDir(), env.ModeOnline, indexPolicy(t, ix), "none"
	opts.Install, opts.Test = []string{"pip install -e ."}, "python -m unittest -v"
	e := mustBuild(t, opts)
	if !e.Usable {
		t.Fatalf("Build(online) = unusable: %s\n%s", e.Reason, readFile(t, e.File(env.BuildLog)))
	}
	return opts, e
}

// TestLockedRebuildFromCache: a project whose isolated build needs a
// backend only the index has, from an index whose files carry no caching
// headers. The cold build records the backend as a build entry of the
// lock and fills the wheel cache from what pip downloaded; the rebuild
// from the lock (the environment's, and the same read back from its
// requirements file) asks the index for nothing, installing every file,
// the backend included, from the cache; gc keeps what a stored lock names
// and drops the rest.
func TestLockedRebuildFromCache(t *testing.T) {
	ix := indextest.Start(t,
		indextest.Wheel{Name: "cwmdep", Version: "1.0"},
		indextest.Wheel{Name: "cwmbackend", Version: "0.3", Module: cwmBackend})
	opts, e := backendProjectBuild(t, ix, "test_proj.py", "import unittest\n\nimport cwmproj\n\n\nclass TestProj(unittest.TestCase):\n"+
		"    def test_version(self):\n        self.assertEqual(cwmproj.VERSION, \"1.0\")\n")
	home := opts.Home
	type entry struct {
		Name         string
		Local, Build bool
	}
	var got []entry
	for _, p := range e.Lock {
		got = append(got, entry{p.Name, p.Local, p.Build})
		if !p.Local && p.SHA256 == "" {
			t.Errorf("lock entry %+v has no sha256", p)
		}
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	want := []entry{{"cwmbackend", false, true}, {"cwmdep", false, false}, {"cwmproj", true, false}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Build(online) lock (-want +got):\n%s\n%s", diff, env.LockRequirements(e.Lock))
	}
	for _, p := range e.Lock {
		if !p.Local {
			if _, err := os.Stat(filepath.Join(wheelCacheDir(home), p.SHA256, path.Base(p.URL))); err != nil {
				t.Errorf("wheel cache after the cold build: %v", err)
			}
		}
	}

	// The lock as a file (cwm env lock), read back: the build entry stays.
	lockPath := filepath.Join(t.TempDir(), "cwmproj.lock")
	if err := os.WriteFile(lockPath, []byte(env.LockRequirements(e.Lock)), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ReadLock(lockPath)
	if err != nil {
		t.Fatalf("ReadLock(%s): %v", lockPath, err)
	}
	if a, b := env.LockRequirements(fromFile), env.LockRequirements(e.Lock); a != b {
		t.Errorf("ReadLock(LockRequirements(lock)) =\n%s\nwant\n%s", a, b)
	}

	for _, lock := range [][]env.LockedPackage{e.Lock, fromFile} {
		before := len(ix.Requests())
		locked := opts
		locked.Lock, locked.Force = lock, true
		again := mustBuild(t, locked)
		if !again.Usable {
			t.Fatalf("Build(--locked) = unusable: %s\n%s", again.Reason, readFile(t, again.File(env.BuildLog)))
		}
		if reqs := ix.Requests()[before:]; len(reqs) > 0 {
			t.Errorf("Build(--locked) asked the index %v, want nothing (every file in the wheel cache)", reqs)
		}
		log := string(readFile(t, again.File(env.BuildLog)))
		if !strings.Contains(log, "linked cwmdep==1.0") {
			t.Errorf("Build(--locked) did not install cwmdep from the wheel cache:\n%s", log)
		}
		if a, b := env.LockRequirements(again.Lock), env.LockRequirements(e.Lock); a != b {
			t.Errorf("Build(--locked) lock =\n%s\nwant\n%s", a, b)
		}
	}

	// gc: a stored lock keeps its files; without one they go.
	if freed, err := PruneWheelCache(home, []*env.Env{e}); err != nil || freed != 0 {
		t.Errorf("PruneWheelCache(the environment) = %d, %v; want 0 freed", freed, err)
	}
	if freed, err := PruneWheelCache(home, nil); err != nil || freed == 0 {
		t.Errorf("PruneWheelCache(none) = %d, %v; want the cache freed", freed, err)
	}
	for _, dir := range []string{wheelCacheDir(home), unpackedCacheDir(home), editableCacheDir(home)} {
		if ents, _ := os.ReadDir(dir); len(ents) != 0 {
			t.Errorf("%s after PruneWheelCache(none) holds %d entries, want 0", dir, len(ents))
		}
	}
}
