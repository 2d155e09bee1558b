package envbuild

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/egress"
	"cwm/internal/egress/indextest"
	"cwm/internal/env"
)

// realIndexPolicy is the relay policy of the host's own index
// configuration (as cwm env build has it), or a skip where the host has
// no index.
func realIndexPolicy(t *testing.T) *egress.Policy {
	t.Helper()
	if os.Getenv("CWM_TESTVENV_OFFLINE") == "1" {
		t.Skip("CWM_TESTVENV_OFFLINE=1: no package index")
	}
	p, err := egress.DefaultPolicy(context.Background())
	if err != nil {
		t.Skipf("no package index on this host: %v", err)
	}
	for _, f := range p.Found {
		if strings.HasPrefix(f, "could not learn where "+p.IndexURL) {
			t.Skipf("the host's index is unreachable from the host: %s", f)
		}
	}
	return &p
}

// uvWorkflow is the uv tests' CI: uv sync, then the tests through uv run.
const uvWorkflow = `
jobs:
  test:
    runs-on: ubuntu-latest
    steps:
      - uses: astral-sh/setup-uv@v5
      - run: uv sync
      - run: uv run python -m unittest -v
`

// uvFiles is a project whose CI installs with uv sync and tests through
// uv run, needing iniconfig 2.1.0 (the release before 2025-06-01; a
// newer one fails its test): an application (tool.uv package = false),
// so uv installs its dependencies only.
func uvFiles() map[string]string {
	return map[string]string{
		"pyproject.toml": `[project]
name = "uvproj"
version = "0.1.0"
requires-python = ">=3.9"
dependencies = ["iniconfig"]

[tool.uv]
package = false
`,
		".github/workflows/ci.yml": uvWorkflow,
		"test_dep.py": `import importlib.metadata
import unittest


class TestDep(unittest.TestCase):
    def test_version(self):
        self.assertEqual(importlib.metadata.version("iniconfig"), "2.1.0")
`,
	}
}

// uvLockFor writes the uv.lock uv would write for uvFiles with iniconfig
// as p (its file and digest as an earlier build's lock names them).
func uvLockFor(p env.LockedPackage, index string) string {
	return fmt.Sprintf(`version = 1
revision = 2
requires-python = ">=3.9"

[[package]]
name = "iniconfig"
version = %q
source = { registry = %q }
wheels = [
    { url = %q, hash = "sha256:%s" },
]

[[package]]
name = "uvproj"
version = "0.1.0"
source = { virtual = "." }
dependencies = [
    { name = "iniconfig" },
]

[package.metadata]
requires-dist = [{ name = "iniconfig" }]
`, p.Version, index, p.URL, p.SHA256)
}

// TestOnlineUV: a repository whose CI runs uv sync and uv run builds
// online with uv from the index (pinned, through the relay), the date
// bound as uv's --exclude-newer, the test command unwrapped from uv run,
// and the lock naming what uv installed; with the project's uv.lock, uv
// sync --frozen installs the lock's set even where resolution would take
// a newer one; --locked rebuilds that set with pip, and uv from the wheel
// cache; an offline build translates the uv steps to pip.
func TestOnlineUV(t *testing.T) {
	policy := realIndexPolicy(t)
	opts := onlineOpts(t, writeTree(t, uvFiles()))
	opts.Home = t.TempDir() // a wheel cache without uv: fetched from the index
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, policy, "2025-06-01"
	e := mustBuild(t, opts)
	logOf := func(e *env.Env) string { return string(readFile(t, e.File(env.BuildLog))) }
	if !e.Usable {
		t.Fatalf("Build(uv sync, uv run) = unusable: %s\n%+v\n%s", e.Reason, e.Install, logOf(e))
	}
	sync := e.Install[1]
	if sync.Command != "uv sync" || !strings.HasPrefix(sync.Run, uvBin+" sync") || sync.Note != "with uv "+uvVersion+" (from the index)" {
		t.Errorf("install step = %+v, want uv sync run with uv %s from the index", sync, uvVersion)
	}
	if !strings.HasSuffix(e.Test.Provenance, uvRunNote) || e.TestCommand.String() != "python -m unittest -v" {
		t.Errorf("test = %q [%s], want python -m unittest -v unwrapped from uv run", e.TestCommand.String(), e.Test.Provenance)
	}
	var ini env.LockedPackage
	for _, p := range e.Lock {
		if p.Name == "iniconfig" {
			ini = p
		}
	}
	if ini.Version != "2.1.0" || len(ini.SHA256) != 64 || !strings.HasSuffix(ini.URL, ".whl") {
		t.Fatalf("lock = %+v, want iniconfig 2.1.0 with its wheel's URL and sha256", e.Lock)
	}
	if _, err := os.Stat(filepath.Join(e.LayerDir(), "repo", "uv.lock")); !os.IsNotExist(err) {
		t.Errorf("the layer's repository has the uv.lock uv sync wrote (%v); want it as its commit has it", err)
	}
	name, sum, _ := uvWheel()
	if _, err := os.Stat(filepath.Join(wheelCacheDir(opts.Home), sum, name)); err != nil {
		t.Errorf("uv's wheel is not in the wheel cache: %v", err)
	}

	// The project's own lock wins: no date bound would resolve a newer
	// iniconfig, uv sync --frozen installs the lock's.
	files := uvFiles()
	files["uv.lock"] = uvLockFor(ini, policy.IndexURL)
	locked := opts
	locked.Source = writeTree(t, files)
	locked.ExcludeNewer = "none"
	e2 := mustBuild(t, locked)
	if !e2.Usable || !strings.HasSuffix(e2.Install[1].Run, " sync --frozen") || e2.Install[1].Note != "with uv "+uvVersion+" (from the wheel cache)" {
		t.Fatalf("Build(uv.lock) = usable %v (%s), step %+v; want usable, uv sync --frozen with uv from the wheel cache\n%s", e2.Usable, e2.Reason, e2.Install[1], logOf(e2))
	}
	if env.LockRequirements(e2.Lock) != env.LockRequirements(e.Lock) {
		t.Errorf("Build(uv.lock) lock:\n%s\nwant\n%s", env.LockRequirements(e2.Lock), env.LockRequirements(e.Lock))
	}

	// --locked: the same set, with pip and hashes required.
	again := locked
	again.Lock = e2.Lock
	e3 := mustBuild(t, again)
	if !e3.Usable || !e3.Locked || env.LockRequirements(e3.Lock) != env.LockRequirements(e2.Lock) {
		t.Errorf("Build(--locked) = usable %v, locked %v (%s), lock\n%s\nwant\n%s", e3.Usable, e3.Locked, e3.Reason, env.LockRequirements(e3.Lock), env.LockRequirements(e2.Lock))
	}
	for _, st := range e3.Install {
		if strings.Contains(st.Run, uvBin) {
			t.Errorf("Build(--locked) step %+v ran uv, want pip", st)
		}
	}

	// Offline: uv translated to pip, as before there was uv.
	offline := buildOpts(locked.Source)
	offline.Home = opts.Home
	e4 := mustBuild(t, offline)
	if st := e4.Install[1]; st.Command != "uv sync" || !strings.Contains(st.Run, "pip install") || strings.Contains(st.Run, uvBin) {
		t.Errorf("Build(--offline) step = %+v, want uv sync translated to pip", st)
	}
}

// TestOnlineUVFallback: where uv cannot be had (the index has no uv, and
// the wheel cache none either) an online build says why on the step and
// installs with pip instead.
func TestOnlineUVFallback(t *testing.T) {
	ix := indextest.Start(t, indextest.Wheel{Name: "cwmdep", Version: "1.0"})
	repo := depRepo(t, "cwmdep==1.0")
	if err := os.WriteFile(filepath.Join(repo, "pyproject.toml"), []byte("[project]\nname = \"app\"\nversion = \"0\"\ndependencies = [\"cwmdep==1.0\"]\n[tool.uv]\npackage = false\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	opts := onlineOpts(t, repo)
	opts.Home = t.TempDir()
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, indexPolicy(t, ix), "none"
	opts.Install = []string{"uv pip install -r requirements.txt"}
	e := mustBuild(t, opts)
	st := e.Install[1]
	if !e.Usable || st.Status != "ok" || !strings.Contains(st.Note, "uv "+uvVersion+" could not be had: ") || !strings.HasSuffix(st.Note, "; translated to pip") ||
		!strings.Contains(st.Run, toolsPipMain+" install") {
		t.Errorf("Build(no uv on the index) = usable %v (%s), step %+v; want usable, pip, a note saying why not uv", e.Usable, e.Reason, st)
	}
	t.Logf("note: %s", st.Note)
}

// TestPruneKeepsUV: cwm env gc's pruning of the wheel cache keeps uv's
// wheel, which no lock names, and drops what no lock names otherwise.
func TestPruneKeepsUV(t *testing.T) {
	home := t.TempDir()
	name, sum, ok := uvWheel()
	if !ok {
		t.Skip("no uv wheel pinned for this machine")
	}
	other := strings.Repeat("a", 64)
	for _, f := range []string{filepath.Join(sum, name), filepath.Join(other, "x-1-py3-none-any.whl")} {
		p := filepath.Join(wheelCacheDir(home), f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := PruneWheelCache(home, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(wheelCacheDir(home), sum, name)); err != nil {
		t.Errorf("PruneWheelCache removed uv's wheel: %v", err)
	}
	if _, err := os.Stat(filepath.Join(wheelCacheDir(home), other)); !os.IsNotExist(err) {
		t.Errorf("PruneWheelCache kept a file no lock names (%v)", err)
	}
}

// TestOnlineUVRustMember: a uv workspace whose member is built with Rust
// (maturin) and which the project pins (rpds-py==0.18.0, a real release),
// synced where the base has no Rust toolchain: the sync fails for the
// member (maturin: "Do you have cargo in your PATH"), and cwm syncs again
// without it and installs the pinned release from the index, saying so on
// the step; the tests import the release.
func TestOnlineUVRustMember(t *testing.T) {
	policy := realIndexPolicy(t)
	opts := onlineOpts(t, writeTree(t, map[string]string{
		"pyproject.toml": `[project]
name = "app"
version = "0.1.0"
requires-python = ">=3.9"
dependencies = ["rpds-py==0.18.0"]

[tool.uv]
package = false

[tool.uv.sources]
rpds-py = { workspace = true }

[tool.uv.workspace]
members = ["core"]
`,
		"core/pyproject.toml": `[build-system]
requires = ["maturin>=1,<2"]
build-backend = "maturin"

[project]
name = "rpds-py"
version = "0.18.0"
`,
		"core/Cargo.toml":          "[package]\nname = \"rpds\"\nversion = \"0.18.0\"\nedition = \"2021\"\n\n[lib]\ncrate-type = [\"cdylib\"]\n",
		"core/src/lib.rs":          "",
		".github/workflows/ci.yml": uvWorkflow,
		"test_dep.py": `import importlib.metadata
import unittest

import rpds


class TestDep(unittest.TestCase):
    def test_release(self):
        self.assertEqual(importlib.metadata.version("rpds-py"), "0.18.0")
        self.assertEqual(len(rpds.HashTrieMap({1: 2})), 1)
`,
	}))
	opts.Mode, opts.Egress, opts.ExcludeNewer = env.ModeOnline, policy, "2024-06-01"
	e := mustBuild(t, opts)
	sync := e.Install[1]
	if !e.Usable || sync.Status != "ok" || !strings.Contains(sync.Run, " --no-install-package rpds-py && ") ||
		!strings.Contains(sync.Note, "the workspace member rpds-py (core) needs Rust (\"Do you have cargo in your PATH\")") ||
		!strings.Contains(sync.Note, "installed the release the project pins (rpds-py==0.18.0) from the index instead") {
		t.Fatalf("Build(a Rust workspace member, no Rust) = usable %v (%s), step %+v; want usable, synced without the member, its pinned release installed\n%s",
			e.Usable, e.Reason, sync, readFile(t, e.File(env.BuildLog)))
	}
	found := false
	for _, p := range e.Lock {
		found = found || p.Name == "rpds-py" && p.Version == "0.18.0" && strings.HasSuffix(p.URL, ".whl")
	}
	if !found {
		t.Errorf("lock = %+v, want rpds-py 0.18.0's wheel", e.Lock)
	}
}
