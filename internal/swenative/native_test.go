package swenative

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/base/basetest"
	"cwm/internal/egress"
	"cwm/internal/egress/indextest"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/episode"
	"cwm/internal/pytestenv"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
	"cwm/internal/taskimport"
)

// injectPy runs spec.py (its -c SCRIPT FILE arguments) after adding the
// test's repository to the installed swebench's tables: its
// specifications by version and, as its parser, swebench's own
// parse_log_django (the test's runner is unittest -v, whose lines that
// parser reads).
const injectPy = `import importlib.util, json, sys, types
for name in ("swebench", "swebench.harness", "swebench.harness.test_spec"):
    spec = importlib.util.find_spec(name)
    mod = types.ModuleType(name)
    mod.__path__ = list(spec.submodule_search_locations)
    sys.modules[name] = mod
from swebench.harness import constants
from swebench.harness.log_parsers import MAP_REPO_TO_PARSER
from swebench.harness.log_parsers.python import parse_log_django
with open(sys.argv[1]) as f:
    constants.MAP_REPO_VERSION_TO_SPECS["cwm-test/calc"] = json.load(f)
MAP_REPO_TO_PARSER["cwm-test/calc"] = parse_log_django
script = sys.argv[3]
sys.argv = ["spec.py"] + sys.argv[4:]
exec(compile(script, "spec.py", "exec"), {"__name__": "__main__"})
`

// git runs git in dir and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t",
		"GIT_COMMITTER_EMAIL=t@example.com", "GIT_AUTHOR_DATE=2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2024-01-01T00:00:00Z")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// diff is git's diff of dir's work tree against HEAD (new files too),
// which is then reset.
func diff(t *testing.T, dir string, files map[string]string) string {
	t.Helper()
	write(t, dir, files)
	git(t, dir, "add", "-A")
	d := git(t, dir, "diff", "--cached")
	git(t, dir, "reset", "-q", "--hard")
	return d + "\n"
}

const testPy = `import unittest

import calc
import calcdep


class CalcTest(unittest.TestCase):
    def test_dep(self):
        self.assertEqual(calcdep.__version__, "1.0")
`

// calcRepo makes the test's repository, cloned as owner+name under a
// clones directory: two commits, each with a bug the rows fix (add at
// the second, the setup commit; mul at the first, which the
// environment's history does not reach). It returns the clones
// directory and the commits.
func calcRepo(t *testing.T) (clones, first, second string, rows []map[string]any) {
	clones = t.TempDir()
	dir := filepath.Join(clones, "cwm-test+calc")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	git(t, dir, "init", "-q", "-b", "main")
	write(t, dir, map[string]string{
		"calc/__init__.py":   "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a + b\n",
		"requirements.txt":   "calcdep==1.0\n",
		"tests/__init__.py":  "",
		"tests/test_calc.py": testPy,
	})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "calc")
	first = git(t, dir, "rev-parse", "HEAD")
	mulGold := diff(t, dir, map[string]string{"calc/__init__.py": "def add(a, b):\n    return a - b\n\n\ndef mul(a, b):\n    return a * b\n"})
	mulTest := diff(t, dir, map[string]string{"tests/test_calc.py": testPy + "\n    def test_mul(self):\n        self.assertEqual(calc.mul(2, 3), 6)\n"})
	write(t, dir, map[string]string{"README": "calc\n"})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "readme")
	second = git(t, dir, "rev-parse", "HEAD")
	addGold := diff(t, dir, map[string]string{"calc/__init__.py": "def add(a, b):\n    return a + b\n\n\ndef mul(a, b):\n    return a + b\n"})
	addTest := diff(t, dir, map[string]string{"tests/test_calc.py": testPy + "\n    def test_add(self):\n        self.assertEqual(calc.add(2, 3), 5)\n"})
	row := func(n int, version, base, gold, test, f2p string) map[string]any {
		return map[string]any{
			"instance_id": fmt.Sprintf("cwm-test__calc-%d", n), "repo": "cwm-test/calc", "version": version,
			"base_commit": base, "environment_setup_commit": second, "patch": gold, "test_patch": test,
			"problem_statement": "calc is wrong", "created_at": "2024-01-01T00:00:00Z",
			"FAIL_TO_PASS": fmt.Sprintf("[%q]", f2p), "PASS_TO_PASS": `["test_dep (tests.test_calc.CalcTest.test_dep)"]`,
		}
	}
	// A third commit, after the setup commit, whose tests need a
	// requirement the setup commit's requirements lack: as pytest 4.6's
	// base commits need importlib_metadata.
	// Its requirement is unpinned, and the index's newest release of it
	// breaks the tests: as docutils 0.22 broke sphinx 3.x, which the
	// harness's images predate.
	write(t, dir, map[string]string{"requirements.txt": "calcdep==1.0\ncalcextra\n", "tests/__init__.py": "import calcextra\n\nassert calcextra.__version__ == \"1.0\"\n"})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "calcextra")
	third := git(t, dir, "rev-parse", "HEAD")
	// A fourth, whose parent (the third) neither the environment's
	// history nor its own objects hold.
	write(t, dir, map[string]string{"README": "calc, with calcextra\n"})
	git(t, dir, "add", "-A")
	git(t, dir, "commit", "-qm", "readme again")
	fourth := git(t, dir, "rev-parse", "HEAD")
	add, mul := "test_add (tests.test_calc.CalcTest.test_add)", "test_mul (tests.test_calc.CalcTest.test_mul)"
	rows = []map[string]any{
		row(1, "1.0", second, addGold, addTest, add),
		row(2, "1.0", first, mulGold, mulTest, mul),
		row(3, "1.1", second, addGold, addTest, add),
		row(4, "1.2", second, addGold, addTest, add),
		row(5, "1.3", second, addGold, addTest, add),
		row(6, "1.0", second, addGold, addTest, mul), // the wrong test: not run at all
		row(7, "1.4", third, addGold, addTest, add),
		row(8, "1.5", second, addGold, addTest, add),
		row(9, "1.4", fourth, addGold, addTest, add),
	}
	return clones, first, second, rows
}

// TestImport builds the test repository's version groups natively from
// specifications added to the real swebench 4.1.0's tables, on the
// Debian bookworm test base (Python 3.11), installing from a loopback
// index through the relay, and validates each instance with swebench's
// parser for it. Version 1.0 holds; 1.1 names a package no index has,
// 1.2's install reaches a host the relay does not allow, 1.3 wants a
// Python no base offers: each group's instance is left out with its
// cause, and 1.0's are kept all the same. 1.4's instance is at a commit
// after the setup commit whose tests import a requirement the setup
// commit's requirements lack: it holds because its install runs again
// at its base_commit, bounded by the date as the build's are, and its
// tests run through a link of the venv's interpreter. 1.5's
// conda packages name one the index does not have: it is listed and the
// rest installed.
func TestImport(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	b := basetest.Link(t, basetest.Debian(t, "bookworm"), home)
	py, err := b.Python()
	if err != nil {
		t.Fatal(err)
	}
	venvPy := pytestenv.Python(t, filepath.Join("testdata", "swebench4.txt"))
	ix := indextest.Start(t,
		indextest.Wheel{Name: "calcdep", Version: "1.0"},
		indextest.Wheel{Name: "calcextra", Version: "1.0"},
		indextest.Wheel{Name: "calcextra", Version: "2.0", Uploaded: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)},
		indextest.Wheel{Name: "setuptools", Version: "69.5.1"},
		indextest.Wheel{Name: "wheel", Version: "0.43.0"})
	allow, err := egress.ParseAllowHost(ix.Addr)
	if err != nil {
		t.Fatal(err)
	}
	policy := egress.Policy{IndexURL: ix.URL}
	policy.Allow(allow)
	// A server the relay does not allow: the install step of 1.2 asks it
	// for a page.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()

	clones, _, _, rows := calcRepo(t)
	specs := map[string]any{
		// Its pre_install edits a tracked file, as sphinx's pins its
		// requirements with sed.
		"1.0": map[string]any{"python": "3.11", "pip_packages": []string{"calcdep==1.0"}, "test_cmd": "python -m unittest -v",
			"pre_install": []string{"sed -i 's/calcdep==1.0/calcdep==1.0 # pinned/' requirements.txt"}},
		"1.1": map[string]any{"python": "3.11", "pip_packages": []string{"calcdep==1.0", "cwm-no-such-package==1.0"}, "test_cmd": "python -m unittest -v"},
		"1.2": map[string]any{"python": "3.11", "pip_packages": []string{"calcdep==1.0"}, "test_cmd": "python -m unittest -v",
			"install": fmt.Sprintf(`python -c "import urllib.request; urllib.request.urlopen('http://%s/', timeout=60)"`, ln.Addr())},
		"1.3": map[string]any{"python": "3.14", "test_cmd": "python -m unittest -v"},
		// Its tests run through a link of the venv's interpreter, as
		// tox-current-env's .tox/py39/bin/python (sphinx 3.4 on).
		"1.4": map[string]any{"python": "3.11", "install": "python -m pip install -r requirements.txt",
			"test_cmd": "ln -sf /venv/bin/python /tmp/linked-python && /tmp/linked-python -m unittest -v"},
		// conda packages, one of which the index does not have (as
		// xarray's environment.yml names cdms2): listed, the rest
		// installed.
		"1.5": map[string]any{"python": "3.11", "packages": "calcdep=1.0 cwm-conda-only", "test_cmd": "python -m unittest -v"},
	}
	dir := t.TempDir()
	specFile := filepath.Join(dir, "specs.json")
	writeJSON(t, specFile, specs)
	inject := filepath.Join(dir, "inject.py")
	write(t, dir, map[string]string{"inject.py": injectPy})
	wrapper := filepath.Join(dir, "python")
	if err := os.WriteFile(wrapper, []byte(fmt.Sprintf("#!/bin/sh\nexec %s %s %s \"$@\"\n", venvPy, inject, specFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, r := range rows {
		b, _ := json.Marshal(r)
		lines = append(lines, string(b))
	}
	data := filepath.Join(dir, "rows.jsonl")
	write(t, dir, map[string]string{"rows.jsonl": strings.Join(lines, "\n") + "\n"})

	pip, err := envbuild.EnsurePip(ctx, filepath.Join(cacheDir(t), "cwm-test"), "")
	if err != nil {
		t.Fatalf("the pip wheel of online builds: %v", err)
	}
	python, err := FindPython(ctx, wrapper)
	if err != nil {
		t.Fatal(err)
	}
	sbs := env.NewSandboxes(rt)
	store := env.NewStore(home)
	o := Options{Repos: clones, Python: python, Envs: sbs, Store: store, Pythons: []string{"3.11"}, Egress: &policy, PipWheel: pip, UploadedPriorTo: "2025-07-01T00:00:00Z",
		RootFS: func(string) string { return b.Rootfs() },
		Build: func(ctx context.Context, s BuildSpec) (*env.Env, error) {
			return envbuild.Build(ctx, sbs, envbuild.Options{
				Home: home, Source: s.Source, Rev: s.Rev, Name: s.Name, Install: s.Install, Test: s.Test,
				RecipeFrom: s.RecipeFrom, Python: s.Python, Runs: 1, NoCoverage: true,
				Bases: []envbuild.BasePython{{Ref: b.Short(), Python: py.Version, Root: b.Digest}},
				Mode:  env.ModeOnline, ExcludeNewer: "2025-07-01", Egress: &policy, PipWheel: pip,
				InstallTimeout: 5 * time.Minute, Limits: env.RunLimits{Timeout: 5 * time.Minute},
			})
		},
		Runs: 2, Timeout: 5 * time.Minute}
	t0 := time.Now()
	kept, rep, err := Import(ctx, data, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("imported in %.1fs", time.Since(t0).Seconds())
	var ids []string
	for _, k := range kept {
		ids = append(ids, k.InstanceID)
		if k.EnvID == "" || k.Imported.LogParser != "parse_log_django" || !strings.HasSuffix(k.Imported.TestCommand, " -m unittest -v tests/test_calc.py") {
			t.Errorf("kept %s: env %q, parser %q, test command %q; want an environment, parse_log_django, the harness's command", k.InstanceID, k.EnvID, k.Imported.LogParser, k.Imported.TestCommand)
		}
	}
	if diff := cmp.Diff([]string{"cwm-test__calc-1", "cwm-test__calc-2", "cwm-test__calc-7", "cwm-test__calc-9", "cwm-test__calc-8"}, ids); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	// Each kept task names its own environment, the instance's install at
	// its base_commit, so that the stages after the import (forage,
	// serve, grade: reward.Grade) open it as validation did, even at a
	// base_commit the group's environment does not hold (calc-7's is
	// after the setup commit).
	for _, k := range kept {
		e := store.Get(k.EnvID)
		if e == nil || e.Commit != k.BaseCommit {
			t.Errorf("kept %s names environment %s: %v; want a stored one at its base_commit %s", k.InstanceID, k.EnvID, e, k.BaseCommit)
			continue
		}
		// An episode starts there (its git history squashed: calc-9's
		// base_commit has no parent in the repository).
		sb, err := sbs.Open(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := episode.Start(ctx, sb, &k, episode.Options{RepoRoot: env.RepoRoot}); err != nil {
			t.Errorf("%s: an episode on its environment: %v", k.InstanceID, err)
		}
		// The pre_install's edit is there, and out of git's view: the
		// agent's diff starts empty.
		res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", "cd /repo && git status --porcelain --untracked-files=no && grep -c pinned requirements.txt || true"}, Capture: 1 << 16})
		if want := map[string]string{"1.0": "1\n"}[k.Version]; err != nil || (want != "" && string(res.Stdout) != want) {
			t.Errorf("%s: git status and the pre_install's edit: %q, %v; want %q", k.InstanceID, res.Stdout, err, want)
		}
		sb.Close()
		for _, c := range []struct {
			patch    string
			resolved bool
		}{{k.Patch, true}, {"", false}} {
			res, err := reward.Grade(ctx, sbs, e, &k, c.patch)
			if err != nil || res.Resolved != c.resolved {
				t.Errorf("%s: reward.Grade(patch of %d bytes) = resolved %v, %v (%s); want %v", k.InstanceID, len(c.patch), res.Resolved, err, res.Reason, c.resolved)
			}
		}
	}
	got := map[string]string{}
	for _, l := range rep.Left {
		got[l.InstanceID] = l.Class
	}
	want := map[string]string{
		"cwm-test__calc-3": ReasonInstall, "cwm-test__calc-4": ReasonInstall,
		"cwm-test__calc-5": ReasonNoPython, "cwm-test__calc-6": taskimport.ReasonGoldFails,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("left out (-want +got):\n%s\n%+v", diff, rep.Left)
	}
	for _, l := range rep.Left {
		var need string
		switch l.InstanceID {
		case "cwm-test__calc-3":
			need = "cwm-no-such-package"
		case "cwm-test__calc-4":
			need = "urlopen"
		case "cwm-test__calc-5":
			need = "wants Python 3.14; the bases have 3.11"
		case "cwm-test__calc-6":
			need = "test_mul (tests.test_calc.CalcTest.test_mul) does not pass with the gold patch (not run)"
		}
		if !strings.Contains(l.Reason, need) {
			t.Errorf("%s left out because %q; want it to say %q", l.InstanceID, l.Reason, need)
		}
	}
	var groups []string
	for _, g := range rep.Groups {
		groups = append(groups, fmt.Sprintf("%s %s: python %s used %q, kept %d", g.Repo, g.Version, g.Python, g.PythonUsed, g.Kept))
	}
	wantGroups := []string{
		`cwm-test/calc 1.0: python 3.11 used "3.11", kept 2`,
		`cwm-test/calc 1.1: python 3.11 used "3.11", kept 0`,
		`cwm-test/calc 1.2: python 3.11 used "3.11", kept 0`,
		`cwm-test/calc 1.3: python 3.14 used "", kept 0`,
		`cwm-test/calc 1.4: python 3.11 used "3.11", kept 2`,
		`cwm-test/calc 1.5: python 3.11 used "3.11", kept 1`,
	}
	if diff := cmp.Diff(wantGroups, groups); diff != "" {
		t.Errorf("groups (-want +got):\n%s", diff)
	}
	if g := rep.Groups[len(rep.Groups)-1]; len(g.Untranslated) != 1 || !strings.Contains(g.Untranslated[0], "the index has no project cwm-conda-only") {
		t.Errorf("group 1.5's untranslated: %q, want cwm-conda-only named", g.Untranslated)
	}
}

func writeJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func cacheDir(t *testing.T) string {
	t.Helper()
	d, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestParserOf: with swebench 4's specifications, the parsers whose 4.x
// form differs from 5.0.2's are read in that form; others, and 5's, as
// named.
func TestParserOf(t *testing.T) {
	for _, c := range []struct{ name, swebench, want string }{
		{"parse_log_sphinx", "4.1.0", "parse_log_sphinx@swebench4"},
		{"parse_log_pytest_v2", "4.0.3", "parse_log_pytest_v2@swebench4"},
		{"parse_log_django", "4.1.0", "parse_log_django"},
		{"parse_log_sphinx", "5.0.2", "parse_log_sphinx"},
		{"parse_log_sphinx", "", "parse_log_sphinx"},
	} {
		if got := parserOf(c.name, c.swebench); got != c.want {
			t.Errorf("parserOf(%q, %q) = %q, want %q", c.name, c.swebench, got, c.want)
		}
	}
}
