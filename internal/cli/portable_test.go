package cli

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/base"
	"cwm/internal/base/basetest"
	"cwm/internal/blobcache"
	"cwm/internal/egress/indextest"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/envoci/ocitest"
)

// portableRepo is a repository whose tests need cwmdep, which only the
// test's loopback index has, and must not see the host's yaml.
var portableRepo = map[string]string{
	"requirements.txt": "cwmdep==1.0\n",
	"test_dep.py": `import importlib.util
import unittest

import cwmdep


class TestDep(unittest.TestCase):
    def test_version(self):
        self.assertEqual(cwmdep.__version__, "1.0")

    def test_no_host_packages(self):
        self.assertIsNone(importlib.util.find_spec("yaml"))

    @unittest.skip("a skip is an outcome too")
    def test_skipped(self):
        pass
`,
}

// TestPortable is the portability test: an environment built online on
// the Debian bookworm test base, its dependency installed from a
// (loopback) index through the relay, pushed to a local registry and
// pulled into a fresh CWM_HOME with no bases at all, brings its base (by
// digest), runs its baseline there with the same outcome for every test,
// and does not see the host's Python packages. A second machine that has
// the base fetches none of it, one whose blob cache has its layers
// fetches no layer, and a base layer damaged in the registry is refused,
// naming the layer, with nothing stored.
func TestPortable(t *testing.T) {
	if ocitest.Binary() == "" {
		t.Skip("docker-registry is not installed: make setup installs it")
	}
	if out, err := exec.Command("python3", "-c", "import yaml").CombinedOutput(); err != nil {
		t.Logf("the host's python3 has no yaml (%s): the check that the environment does not see it proves less", strings.TrimSpace(string(out)))
	}
	cache, err := os.UserCacheDir()
	if err != nil {
		t.Fatal(err)
	}
	pip, err := envbuild.EnsurePip(context.Background(), filepath.Join(cache, "cwm-test"), "") // before PIP_INDEX_URL names the test's index
	if err != nil {
		t.Fatalf("the pip wheel of online builds: %v", err)
	}
	bookworm := basetest.Debian(t, "bookworm")
	ix := indextest.Start(t, indextest.Wheel{Name: "cwmdep", Version: "1.0"})
	reg := ocitest.Start(t, "", "")

	builder := t.TempDir()
	t.Setenv("CWM_HOME", builder)
	t.Setenv("PIP_INDEX_URL", ix.URL)
	basetest.Link(t, bookworm, builder)
	linkPip(t, pip, builder)
	repo := writeRepo(t, portableRepo)
	code, out, errOut := runCLI(t, "", "env", "build", "--base", bookworm.Short(), "--allow-host", ix.Addr,
		"--exclude-newer", "none", "--no-coverage", "--quiet", repo)
	if code != 0 {
		t.Fatalf("env build = %d\n%s%s", code, out, errOut)
	}
	id := strings.TrimSpace(out)
	built, err := env.NewStore(builder).Resolve(id)
	if err != nil {
		t.Fatal(err)
	}
	if !built.Usable || built.Base != bookworm.Digest {
		t.Fatalf("built %s: usable %v (%s), base %s; want usable on %s", id, built.Usable, built.Reason, built.Base, bookworm.Digest)
	}
	if got := strings.Join(ix.Requests(), ","); !strings.Contains(got, "/simple/cwmdep/") {
		t.Fatalf("the index served %q: cwmdep was not installed from it", got)
	}

	code, out, errOut = runCLI(t, "", "env", "push", id, reg.Host+"/cwm/portable")
	if code != 0 || !strings.Contains(errOut, "with its base "+bookworm.Short()) {
		t.Fatalf("env push = %d\n%s%s", code, out, errOut)
	}
	ref := strings.TrimSpace(out)
	// Pushed again under another tag: the registry has every blob, the
	// base's included.
	code, out, errOut = runCLI(t, "", "env", "push", id, reg.Host+"/cwm/portable:again")
	if code != 0 || !strings.Contains(errOut, ", 0 uploaded (0B), ") {
		t.Errorf("env push again = %d; want nothing uploaded\n%s%s", code, out, errOut)
	}

	// A machine with no bases at all.
	fresh := t.TempDir()
	t.Setenv("CWM_HOME", fresh)
	var pulled struct {
		EnvID string `json:"env_id"`
		Base  struct {
			Digest  string `json:"digest"`
			Present bool   `json:"present"`
			Fetched int    `json:"fetched"`
		} `json:"base"`
	}
	pull := func(want int) string {
		t.Helper()
		code, out, errOut := runCLI(t, "", "env", "pull", "--json", ref)
		if code != want {
			t.Fatalf("env pull into %s = %d, want %d\n%s%s", os.Getenv("CWM_HOME"), code, want, out, errOut)
		}
		if code == 0 {
			if err := json.Unmarshal([]byte(out), &pulled); err != nil {
				t.Fatalf("env pull --json: %v\n%s", err, out)
			}
		}
		return errOut
	}
	pull(0)
	got := base.NewStore(fresh).Get(bookworm.Digest)
	if pulled.EnvID != id || pulled.Base.Digest != bookworm.Digest || pulled.Base.Present || pulled.Base.Fetched != len(bookworm.Layers) {
		t.Errorf("env pull = %+v; want %s with base %s imported, %d layers fetched", pulled, id, bookworm.Digest, len(bookworm.Layers))
	}
	if got == nil || got.Py == nil || got.Py.Version != bookworm.Py.Version {
		t.Fatalf("after the pull, the base store of %s has %v, want base %s with Python %s", fresh, got, bookworm.Short(), bookworm.Py.Version)
	}

	code, out, errOut = runCLI(t, "", "env", "test", "--json", id)
	if code != 0 {
		t.Fatalf("env test on the pulling machine = %d\n%s%s", code, out, errOut)
	}
	var run struct {
		Tests []env.TestOutcome `json:"tests"`
	}
	if err := json.Unmarshal([]byte(out), &run); err != nil {
		t.Fatalf("env test --json: %v\n%s", err, out)
	}
	want := map[string]string{}
	for _, r := range built.Baseline {
		want[r.ID] = r.Status
	}
	have := map[string]string{}
	for _, o := range run.Tests {
		have[o.ID] = o.Outcome
	}
	t.Logf("builder %v, pulled %v", want, have)
	if len(want) != 3 {
		t.Errorf("the builder's baseline has %d tests, want 3: %v", len(want), want)
	}
	if d := cmp.Diff(want, have); d != "" {
		t.Errorf("outcomes on the pulling machine differ from the builder's baseline (-builder +pulled):\n%s", d)
	}

	code, out, errOut = runCLI(t, "python -c 'import cwmdep; print(\"cwmdep\", cwmdep.__version__)'; python -c 'import yaml' 2>&1; echo yaml=$?", "env", "shell", id)
	if code != 0 || !strings.Contains(out, "cwmdep 1.0") || !strings.Contains(out, "No module named 'yaml'") || !strings.Contains(out, "yaml=1") {
		t.Errorf("env shell on the pulling machine = %d; want cwmdep 1.0 and no yaml\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "", "env", "show", id)
	if code != 0 || !strings.Contains(out, "portable:    yes (base "+bookworm.Short()) {
		t.Errorf("env show on the pulling machine = %d\n%s", code, out)
	}

	// The same through a file: env export writes the base in, env import
	// brings it into a machine with no bases.
	t.Setenv("CWM_HOME", builder)
	file := filepath.Join(t.TempDir(), "portable.tar")
	if code, out, errOut := runCLI(t, "", "env", "export", id, file); code != 0 {
		t.Fatalf("env export = %d\n%s%s", code, out, errOut)
	}
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	if code, out, errOut := runCLI(t, "", "env", "import", file); code != 0 || strings.TrimSpace(out) != id {
		t.Fatalf("env import = %d\n%s%s", code, out, errOut)
	}
	if base.NewStore(home).Get(bookworm.Digest) == nil {
		t.Errorf("env import of %s did not bring base %s", file, bookworm.Short())
	}
	if code, out, errOut := runCLI(t, "python -c 'import cwmdep; print(\"cwmdep\", cwmdep.__version__)'", "env", "shell", id); code != 0 || !strings.Contains(out, "cwmdep 1.0") {
		t.Errorf("env shell after env import = %d\n%s%s", code, out, errOut)
	}

	// A machine with the base: nothing of it is fetched.
	t.Setenv("CWM_HOME", t.TempDir())
	basetest.Link(t, bookworm, os.Getenv("CWM_HOME"))
	pull(0)
	if !pulled.Base.Present || pulled.Base.Fetched != 0 {
		t.Errorf("env pull onto a machine with the base = %+v, want it present, nothing fetched", pulled.Base)
	}
	// A machine whose blob cache has the base's layers but whose store
	// does not have the base: imported from the cache.
	home = t.TempDir()
	t.Setenv("CWM_HOME", home)
	if err := base.NewStore(home).Remove(basetest.Link(t, bookworm, home)); err != nil {
		t.Fatal(err)
	}
	pull(0)
	if pulled.Base.Present || pulled.Base.Fetched != 0 || base.NewStore(home).Get(bookworm.Digest) == nil {
		t.Errorf("env pull onto a machine whose blob cache has the base = %+v, want it imported with no layer fetched", pulled.Base)
	}

	// The base's layer damaged in the registry (the same size, other bytes).
	layer := bookworm.Layers[0].Digest
	data := filepath.Join(reg.Dir, "docker", "registry", "v2", "blobs", "sha256", layer[7:9], layer[7:], "data")
	f, err := os.OpenFile(data, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("the base's layer in the registry's storage: %v", err)
	}
	if _, err := f.WriteAt([]byte("cwm damaged this"), 4096); err != nil {
		t.Fatal(err)
	}
	f.Close()
	home = t.TempDir()
	t.Setenv("CWM_HOME", home)
	errOut = pull(1)
	t.Logf("the pull of a damaged base layer: %s", strings.TrimSpace(errOut))
	if !strings.Contains(errOut, "layer 1 of 1 ("+blobcache.Short(layer)+")") || !strings.Contains(errOut, "import the base "+bookworm.Short()) {
		t.Errorf("env pull of a damaged base layer: stderr %q; want the layer named", errOut)
	}
	if bs, _ := base.NewStore(home).List(); len(bs) != 0 {
		t.Errorf("after a refused pull the base store has %d bases", len(bs))
	}
	if es, _ := env.NewStore(home).List(); len(es) != 0 {
		t.Errorf("after a refused pull the environment store has %d environments", len(es))
	}
	if blobcache.New(home).Has(layer, bookworm.Layers[0].Size) {
		t.Errorf("after a refused pull the blob cache has the damaged layer %s", blobcache.Short(layer))
	}
}

// linkPip puts the pip wheel of online builds into home's tools, as a
// build would fetch it, so that the test's index need not serve it.
func linkPip(t *testing.T, pip, home string) {
	t.Helper()
	os.MkdirAll(filepath.Join(home, "tools"), 0o755)
	if err := os.Link(pip, filepath.Join(home, "tools", filepath.Base(pip))); err != nil {
		t.Fatal(err)
	}
}

// writeRepo writes files (name to text) into a new directory.
func writeRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	repo := t.TempDir()
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(repo, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return repo
}
