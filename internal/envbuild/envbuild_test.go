package envbuild

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/sandbox/sandboxtest"
	"cwm/internal/testrun"
	"cwm/internal/testtime"
)

// The tests share one runtime and one $CWM_HOME; environments that several
// tests look at are built once.
var (
	testSandboxes *env.Sandboxes
	testHome      string
)

func TestMain(m *testing.M) {
	sandboxtest.Main(m, "envbuild", func(rt *sandbox.Runtime, home string) {
		testSandboxes, testHome = env.NewSandboxes(rt), home
	})
}

// copyRepo copies a test repository to a fresh directory (a plain
// directory source, as users' checkouts without .git are).
func copyRepo(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := copyPlainTree(src, dst); err != nil {
		t.Fatal(err)
	}
	return dst
}

func buildOpts(src string) Options {
	return Options{Home: testHome, Source: src, Runs: 1, NoCoverage: true,
		Limits: env.RunLimits{Timeout: 2 * time.Minute}}
}

func mustBuild(t testing.TB, opts Options) *env.Env {
	t.Helper()
	e, err := Build(context.Background(), testSandboxes, opts)
	if err != nil {
		t.Fatalf("Build(%s): %v", opts.Source, err)
	}
	return e
}

var (
	textkitOnce sync.Once
	textkit     *env.Env
	textkitErr  error
)

// textkitEnv builds the example repository once for every test that
// needs it: three baseline runs and the coverage map, as cwm env build
// does by default.
func textkitEnv(t testing.TB) *env.Env {
	t.Helper()
	textkitOnce.Do(func() {
		src := filepath.Join(t.TempDir(), "textkit")
		if err := copyPlainTree("../../examples/textkit", src); err != nil {
			textkitErr = err
			return
		}
		textkit, textkitErr = Build(context.Background(), testSandboxes, Options{Home: testHome, Source: src, Runs: 3})
	})
	if textkitErr != nil {
		t.Fatalf("build examples/textkit: %v", textkitErr)
	}
	return textkit
}

func TestRecipes(t *testing.T) {
	tests := []struct {
		repo      string
		framework testrun.Framework
		testProv  string
		install   []string // provenance of each install step after the venv
		counts    env.Counts
	}{
		{"toxonly", testrun.Pytest, "tox.ini [testenv] commands", []string{"tox.ini [testenv] deps"},
			env.Counts{Tests: 8, Pass: 8}},
		{"wfonly", testrun.Pytest, ".github/workflows/tests.yaml: job unit, step Unit tests", nil,
			env.Counts{Tests: 3, Pass: 3}},
		{"bareunit", testrun.Unittest, "default (unittest: no pytest in the tests)", nil,
			env.Counts{Tests: 5, Pass: 4, Skip: 1}},
		{"setuppy", testrun.Pytest, "default (pytest)", []string{"setup.py", "requirements.txt", "requirements-dev.txt"},
			env.Counts{Tests: 4, Pass: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			e := mustBuild(t, buildOpts(copyRepo(t, filepath.Join("testdata", tt.repo))))
			if !e.Usable || e.Counts != tt.counts {
				t.Errorf("Build(%s) = usable %v, %v; want usable, %v (reason %q)", tt.repo, e.Usable, e.Counts, tt.counts, e.Reason)
			}
			if e.TestCommand.Framework != tt.framework || e.Test.Provenance != tt.testProv {
				t.Errorf("Build(%s) test = %s %q from %q; want %s from %q", tt.repo, e.TestCommand.Framework, e.Test.Command, e.Test.Provenance, tt.framework, tt.testProv)
			}
			var prov []string
			for _, s := range e.Install[1:] {
				prov = append(prov, s.Provenance)
				if s.Status != "ok" {
					t.Errorf("Build(%s) install %q: %s %s", tt.repo, s.Command, s.Status, s.Note)
				}
			}
			if strings.Join(prov, "|") != strings.Join(tt.install, "|") {
				t.Errorf("Build(%s) install provenance = %q, want %q", tt.repo, prov, tt.install)
			}
		})
	}
}

func TestExample(t *testing.T) {
	e := textkitEnv(t)
	if !e.Usable || e.Counts.Pass != e.Counts.Tests || e.Counts.Tests < 100 {
		t.Fatalf("textkit: usable %v, %v, reason %q", e.Usable, e.Counts, e.Reason)
	}
	if e.Test.Provenance != ".github/workflows/ci.yml: job test, step Test" ||
		e.Install[1].Provenance != ".github/workflows/ci.yml: job test, step Install" {
		t.Errorf("textkit recipe: install %+v, test %+v", e.Install, e.Test)
	}
	if e.LayerBytes <= 0 || e.LayerBytes >= 5<<20 {
		t.Errorf("textkit layer = %d bytes, want under 5 MB", e.LayerBytes)
	}
	t.Logf("textkit layer: %d bytes (%.2f MB), build %.1fs", e.LayerBytes, float64(e.LayerBytes)/(1<<20), e.BuildSecs)
	// The layer's repository is clean after installing and running.
	out, err := exec.Command("git", "-C", filepath.Join(e.LayerDir(), "repo"), "status", "--porcelain").CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("git status in the layer = %q, %v; want clean", out, err)
	}
	got, err := env.NewStore(testHome).Resolve("textkit")
	if err != nil || got.ID != e.ID {
		t.Errorf("Resolve(textkit) = %v, %v; want %s", got, err, e.ID)
	}
}

func TestFlaky(t *testing.T) {
	opts := buildOpts(copyRepo(t, "testdata/flaky"))
	opts.Runs = 3
	e := mustBuild(t, opts)
	status := map[string]string{}
	for _, tr := range e.Baseline {
		status[tr.ID] = tr.Status
	}
	if status["tests/test_coin.py::test_stable"] != "pass" || e.Counts.Flaky == 0 || !e.Usable {
		t.Errorf("flaky repo: %v, statuses %v; want test_stable pass, some flaky, usable", e.Counts, status)
	}
	for _, tr := range e.Baseline {
		if tr.Status == env.Flaky && tr.Outcomes[0] == tr.Outcomes[1] && tr.Outcomes[1] == tr.Outcomes[2] {
			t.Errorf("%s is flaky with identical outcomes %v", tr.ID, tr.Outcomes)
		}
	}
}

func TestUnusable(t *testing.T) {
	tests := []struct {
		repo   string
		test   string
		limits env.RunLimits
		reason []string
	}{
		{"allfail", "", env.RunLimits{}, []string{"no test passes in every run", "2 fail"}},
		{"missingdep", "", env.RunLimits{}, []string{"missing dependencies", "cwm_absent_alpha", "cwm_absent_beta"}},
		{"hang", "pytest tests/test_hang.py::test_forever", env.RunLimits{Timeout: testtime.Scale(3 * time.Second)}, []string{"no test passes in every run", "1 error", "timeout limit"}},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			opts := buildOpts(copyRepo(t, filepath.Join("testdata", tt.repo)))
			opts.Test = tt.test
			opts.Limits = tt.limits
			if opts.Limits.Timeout == 0 {
				opts.Limits.Timeout = 2 * time.Minute
			}
			e := mustBuild(t, opts)
			if e.Usable {
				t.Fatalf("Build(%s) is usable, want unusable", tt.repo)
			}
			for _, want := range tt.reason {
				if !strings.Contains(e.Reason, want) {
					t.Errorf("Build(%s).Reason = %q, want it to mention %q", tt.repo, e.Reason, want)
				}
			}
			// Kept, and listed as unusable.
			if got := env.NewStore(testHome).Get(e.ID); got == nil || got.Usable {
				t.Errorf("store.Get(%s) = %v, want the unusable environment", e.ID, got)
			}
		})
	}
}

// TestRunawaySuites: a suite that hangs or prints without end is stopped
// by its limit; what ran before is kept and the runaway test is an error.
func TestRunawaySuites(t *testing.T) {
	tests := []struct {
		repo    string
		limits  env.RunLimits
		reason  string
		runaway string
		quick   string
	}{
		{"hang", env.RunLimits{Timeout: testtime.Scale(3 * time.Second)}, "timeout", "tests/test_hang.py::test_forever", "tests/test_hang.py::test_quick"},
		{"noisy", env.RunLimits{Timeout: time.Minute, Output: 1 << 20}, "output", "test_noisy.Noisy.test_shout", "test_noisy.Noisy.test_quick"},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			opts := buildOpts(copyRepo(t, filepath.Join("testdata", tt.repo)))
			opts.Limits = tt.limits
			opts.Runs = 2
			start := time.Now()
			e := mustBuild(t, opts)
			if d := time.Since(start); d > testtime.Scale(time.Minute) {
				t.Errorf("Build(%s) took %v", tt.repo, d)
			}
			for i, r := range e.Runs {
				if r.Reason != tt.reason {
					t.Errorf("Build(%s) run %d: reason %q, want %q", tt.repo, i+1, r.Reason, tt.reason)
				}
			}
			status := map[string]string{}
			for _, tr := range e.Baseline {
				status[tr.ID] = tr.Status
			}
			if status[tt.runaway] != "error" || status[tt.quick] != "pass" || !e.Usable {
				t.Errorf("Build(%s): statuses %v, usable %v (%s); want %s error, %s pass, usable", tt.repo, status, e.Usable, e.Reason, tt.runaway, tt.quick)
			}
		})
	}
}

func TestMissingDependency(t *testing.T) {
	e := mustBuild(t, buildOpts(copyRepo(t, "testdata/missingdep")))
	got := map[string]env.Missing{}
	for _, m := range e.Missing {
		got[m.Import] = m
	}
	// The dependencies are names no index has: missing on every host,
	// whatever it has installed.
	for _, imp := range []string{"cwm_absent_alpha", "cwm_absent_beta"} {
		if m, ok := got[imp]; !ok {
			t.Errorf("Missing = %+v, want %s", e.Missing, imp)
		} else if m.Debian != "" {
			t.Errorf("Missing[%s].Debian = %q, want none", imp, m.Debian)
		}
	}
	if _, ok := got["packaging"]; ok {
		t.Errorf("Missing = %+v: packaging is installed", e.Missing)
	}
}

// TestVersionerReported: a project whose build makes its version with
// setuptools_scm, which this environment cannot satisfy (no host has
// version 9999), has it reported missing, from its build-system.
func TestVersionerReported(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"pyproject.toml":  "[build-system]\nrequires = [\"setuptools>=61\", \"setuptools_scm>=9999\"]\nbuild-backend = \"setuptools.build_meta\"\n",
		"tests/test_a.py": "def test_a():\n    pass\n",
	})
	e := mustBuild(t, buildOpts(dir))
	for _, m := range e.Missing {
		if m.Requirement == "setuptools_scm>=9999" && m.Source == "build-system" {
			return
		}
	}
	t.Errorf("Missing = %+v, want setuptools_scm>=9999 from the build-system", e.Missing)
}

// TestDebianPackage: the Debian package named for a missing module, by the
// table or by apt's metadata.
func TestDebianPackage(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		m    env.Missing
		want string
	}{
		{env.Missing{Import: "dateutil", Requirement: "python-dateutil"}, "python3-dateutil"},
		{env.Missing{Import: "yaml", Requirement: "PyYAML>=6"}, "python3-yaml"},
		{env.Missing{Import: "requests", Requirement: "requests>=2.20"}, "python3-requests"},
		{env.Missing{Import: "cwm_absent_alpha", Requirement: "cwm-absent-alpha"}, ""},
	} {
		want := c.want
		if _, inTable := debianNames[c.m.Import]; !inTable && want != "" && !aptKnows(ctx, want) {
			want = "" // this host's apt lists do not have it
		}
		if got := debianPackage(ctx, c.m); got != want {
			t.Errorf("debianPackage(%+v) = %q, want %q", c.m, got, want)
		}
	}
}

// digest hashes a tree's paths, modes and contents.
func digest(t *testing.T, root string) string {
	t.Helper()
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s %v\n", rel, info.Mode())
		if d.Type().IsRegular() {
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			io.Copy(h, f)
			f.Close()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func TestDestructiveSuite(t *testing.T) {
	canaryDir := t.TempDir()
	canary := filepath.Join(canaryDir, "precious.txt")
	os.WriteFile(canary, []byte("keep me"), 0o644)
	src := copyRepo(t, "testdata/destructive")
	os.WriteFile(filepath.Join(src, "tests", "canary.txt"), []byte(canary), 0o644)
	before := digest(t, src)
	opts := buildOpts(src)
	opts.Runs = 2
	e := mustBuild(t, opts)
	layer := digest(t, e.LayerDir())

	// One more run of the suite, as env test does.
	rep, err := runSuite(context.Background(), testSandboxes, e, testrun.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(rep.Note, "deleted /repo") || len(rep.Tests) != 2 || rep.Tests[1].Outcome != testrun.Pass {
		t.Errorf("destructive run: note %q, %d tests; want the deletion noted and 2 tests", rep.Note, len(rep.Tests))
	}
	if !e.Usable || e.Counts.Pass != 2 {
		t.Errorf("destructive repo: usable %v, %v (%s); want both tests passing in every run", e.Usable, e.Counts, e.Reason)
	}
	if b, err := os.ReadFile(canary); err != nil || string(b) != "keep me" {
		t.Errorf("canary outside the sandbox = %q, %v; want it untouched", b, err)
	}
	if got := digest(t, e.LayerDir()); got != layer {
		t.Errorf("the layer changed after a run of the suite")
	}
	if got := digest(t, src); got != before {
		t.Errorf("the source directory changed")
	}
}

func TestSameID(t *testing.T) {
	first := textkitEnv(t)
	// A different copy of the same content, rebuilt from scratch.
	opts := Options{Home: testHome, Source: copyRepo(t, "../../examples/textkit"), Runs: 1, Force: true}
	again := mustBuild(t, opts)
	if again.ID != first.ID || again.Revision != first.Revision {
		t.Errorf("rebuild: id %s revision %s, want %s %s", again.ID, again.Revision, first.ID, first.Revision)
	}
	// Without --force the stored environment is reused.
	opts.Force = false
	if reused := mustBuild(t, opts); reused.ID != first.ID || !reused.BuiltAt.Equal(again.BuiltAt) {
		t.Errorf("build without force = %s built %v, want the stored %s built %v", reused.ID, reused.BuiltAt, again.ID, again.BuiltAt)
	}
}

func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(context.Background(), dir, []string{"GIT_AUTHOR_DATE=2020-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2020-01-01T00:00:00Z"}, args...)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out)
}

func TestGitSource(t *testing.T) {
	src := copyRepo(t, "testdata/toxonly")
	gitIn(t, src, "init", "-q")
	gitIn(t, src, "add", "-A")
	gitIn(t, src, "commit", "-qm", "first")
	first := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "tag", "-a", "-m", "release 0.9", "v0.9")
	gitIn(t, src, "tag", "lightweight-0.9")
	os.WriteFile(filepath.Join(src, "later.txt"), []byte("from the future\n"), 0o644)
	gitIn(t, src, "add", "-A")
	gitIn(t, src, "commit", "-qm", "second")
	second := gitIn(t, src, "rev-parse", "HEAD")
	gitIn(t, src, "tag", "-a", "-m", "release 1.0", "v1.0")

	opts := buildOpts(src)
	opts.Rev = "HEAD~1"
	old := mustBuild(t, opts)
	repo := filepath.Join(old.LayerDir(), "repo")
	if old.Revision != first || old.Repository.Kind != "git" {
		t.Errorf("Build(rev HEAD~1) revision = %s (%s), want %s (git)", old.Revision, old.Repository.Kind, first)
	}
	if n := gitIn(t, repo, "rev-list", "--all", "--count"); n != "1" {
		t.Errorf("layer history has %s commits, want 1", n)
	}
	if _, err := git(context.Background(), repo, nil, "cat-file", "-e", second); err == nil {
		t.Errorf("the later commit %s is in the layer", second)
	}
	if fileExists(filepath.Join(repo, "later.txt")) {
		t.Errorf("later.txt is in the layer at HEAD~1")
	}
	// The nearest version tag travels with the commit (setuptools_scm
	// versions from it); a later commit's does not.
	if tags := gitIn(t, repo, "tag", "--list"); tags != "lightweight-0.9" && tags != "v0.9" {
		t.Errorf("layer tags = %q, want the one HEAD~1 describes from", tags)
	}
	if d := gitIn(t, repo, "describe", "--tags"); d != "lightweight-0.9" && d != "v0.9" {
		t.Errorf("git describe in the layer = %q", d)
	}
	opts.Rev = ""
	now := mustBuild(t, opts)
	if now.ID == old.ID || now.Revision != second {
		t.Errorf("Build(HEAD) = id %s revision %s; want a new id, revision %s", now.ID, now.Revision, second)
	}
	// Three commits on, two past the tag: the layer keeps the commit back
	// to its tag, shallow, with the source's root commit noted; git
	// describe counts the distance as in the source.
	for _, f := range []string{"a.txt", "b.txt"} {
		os.WriteFile(filepath.Join(src, f), []byte(f), 0o644)
		gitIn(t, src, "add", "-A")
		gitIn(t, src, "commit", "-qm", f)
	}
	gitIn(t, src, "tag", "-d", "v1.0")
	gitIn(t, src, "tag", "v1.1", second)
	later := mustBuild(t, opts)
	lrepo := filepath.Join(later.LayerDir(), "repo")
	if n := gitIn(t, lrepo, "rev-list", "--all", "--count"); n != "3" || gitIn(t, lrepo, "rev-parse", "--is-shallow-repository") != "true" {
		t.Errorf("layer at two past the tag: %s commits, want 3 in a shallow repository", n)
	}
	if d, want := gitIn(t, lrepo, "describe", "--tags", "--long"), gitIn(t, src, "describe", "--tags", "--long"); d != want {
		t.Errorf("describe in the layer = %q, in the source %q", d, want)
	}
	if roots, err := os.ReadFile(filepath.Join(lrepo, ".git", "cwm-roots")); err != nil || strings.TrimSpace(string(roots)) != first {
		t.Errorf(".git/cwm-roots = %q, %v; want the root commit %s", roots, err, first)
	}
	opts.Rev = "no-such-rev"
	if _, err := Build(context.Background(), testSandboxes, opts); err == nil || !strings.Contains(err.Error(), "no such revision") {
		t.Errorf("Build(no-such-rev) error = %v, want no such revision", err)
	}
}

func TestInterruptedBuild(t *testing.T) {
	store := env.NewStore(testHome)
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	go func() {
		// Cancel once installation has started.
		buf := make([]byte, 4096)
		for {
			n, err := pr.Read(buf)
			if strings.Contains(string(buf[:n]), "install:") || err != nil {
				cancel()
				io.Copy(io.Discard, pr)
				return
			}
		}
	}()
	src := copyRepo(t, "testdata/setuppy")
	// Content of its own, so that no stored environment has its id.
	os.WriteFile(filepath.Join(src, "interrupted.txt"), []byte(time.Now().String()), 0o644)
	opts := buildOpts(src)
	opts.Progress = pw
	_, err := Build(ctx, testSandboxes, opts)
	pw.Close()
	if err == nil {
		t.Fatal("Build with a cancelled context succeeded")
	}
	envs, _ := store.List()
	for _, e := range envs {
		if e.Repository.Location == opts.Source {
			t.Errorf("interrupted build listed: %s usable=%v", e.ID, e.Usable)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(store.Dir(), ".build-*")); len(left) > 0 {
		t.Errorf("the cancelled build left %v", left)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestMissingNames: the import and Debian names of requirements whose
// names mislead, and what counts as tooling rather than a dependency.
func TestMissingNames(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct{ req, imp, deb string }{
		{"python-dotenv>=1", "dotenv", "python3-dotenv"},
		{"PySocks", "socks", "python3-socks"},
		{"zope.interface>=5", "zope.interface", "python3-zope.interface"},
		{"jaraco.functools", "jaraco.functools", "python3-jaraco.functools"},
	} {
		m := env.Missing{Requirement: c.req, Import: importName(c.req)}
		if m.Import != c.imp {
			t.Errorf("importName(%q) = %q, want %q", c.req, m.Import, c.imp)
		}
		want := c.deb
		if _, inTable := debianNames[m.Import]; !inTable && !aptKnows(ctx, want) {
			want = "" // this host's apt lists do not have it
		}
		if got := debianPackage(ctx, m); got != want {
			t.Errorf("debianPackage(%q) = %q, want %q", c.req, got, want)
		}
	}
	for name, want := range map[string]bool{
		"tox-uv-bare": true, "pyodide-build": true, "mypy": true, "pytype": true, "types-requests": true,
		"pandas-stubs": true, "requests": false, "mypy-extensions": false, "toxiproxy": false,
	} {
		if got := isTooling(name); got != want {
			t.Errorf("isTooling(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestInstalledTooOld: a Debian package the host has is reported with its
// version (too old, not to be installed again); one it lacks is not.
func TestInstalledTooOld(t *testing.T) {
	if _, err := exec.LookPath("dpkg-query"); err != nil {
		t.Skip("no dpkg on this host")
	}
	ms := finishMissing(context.Background(), []env.Missing{
		{Requirement: "coreutils>=999", Debian: "coreutils", Source: "pip"},
		{Requirement: "cwm-absent-alpha", Debian: "python3-cwm-absent-alpha", Source: "pip"},
	}, true, true)
	if !strings.HasSuffix(ms[0].Installed, " (Debian)") || ms[1].Installed != "" {
		t.Errorf("finishMissing = %+v, want coreutils installed (too old), the other absent", ms)
	}
	// Online, the index is where a dependency comes from: no Debian
	// package is named.
	online := finishMissing(context.Background(), []env.Missing{{Requirement: "pytest-httpbin>=1", Source: "pip"}}, false, false)
	if online[0].Debian != "" || online[0].Import != "pytest_httpbin" {
		t.Errorf("finishMissing(online) = %+v, want the import name and no Debian package", online)
	}
}

// TestAlreadyBuiltSaysForce: a usable environment built with missing
// dependencies is returned as it is by a second build, which says that
// --force builds it again once the base has them.
func TestAlreadyBuiltSaysForce(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"requirements.txt":         "cwm-absent-alpha\n",
		"tests/test_a.py":          "def test_a():\n    pass\n",
		".github/workflows/ci.yml": "jobs:\n  test:\n    steps:\n      - run: pip install -r requirements.txt\n      - run: pytest tests\n",
	})
	e := mustBuild(t, buildOpts(dir))
	if !e.Usable || len(e.Missing) == 0 {
		t.Fatalf("Build = usable %v, missing %v; want usable with a missing dependency", e.Usable, e.Missing)
	}
	var out bytes.Buffer
	opts := buildOpts(dir)
	opts.Progress = &out
	if again := mustBuild(t, opts); again.ID != e.ID || !strings.Contains(out.String(), "already built") ||
		!strings.Contains(out.String(), "--force builds it again") {
		t.Errorf("second build = %s, said:\n%s\nwant the stored one and --force named", again.ID, out.String())
	}
}
