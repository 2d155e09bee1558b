package env

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/errkind"
	"cwm/internal/golden"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// TestManifestSchema fixes env.json's format: every field set, as a build
// writes it. The baseline is not in it (baseline.json is).
func TestManifestSchema(t *testing.T) {
	e := Env{Version: ManifestVersion, ID: "0123abcd", Name: "textkit",
		Repository: Source{Kind: "git", Location: "/src/textkit"}, Revision: "main", Tree: "t1", Commit: "c1",
		Base: "host", Python: "3.11", Online: true,
		Install:     []Step{{Command: "pip install -e .", Provenance: "pyproject.toml", Run: "pip install --no-index -e .", Status: "ok", Seconds: 1.5}},
		Test:        Step{Command: "pytest -q", Provenance: "flag --test"},
		TestCommand: testrun.Command{Framework: testrun.Pytest, Args: []string{"-q"}, Line: "python -m pytest -q"},
		Limits:      RunLimits{Timeout: 15 * time.Minute, Memory: 4 << 30, Pids: 512, Output: 1 << 20, Disk: 2 << 30},
		Runs:        []RunRecord{{Seconds: 2.5, Exit: "exit 1", Tests: 2}},
		Counts:      Counts{Tests: 2, Pass: 1, Fail: 1},
		Baseline:    []TestResult{{ID: "t::a", Status: "pass"}},
		Missing:     []Missing{{Import: "yaml", Requirement: "PyYAML>=5", Source: "pip"}},
		Usable:      true, Reason: "", Coverage: &CoverageInfo{File: "coverage.json", Functions: 3, Tests: 1, Seconds: 0.5},
		BuiltAt: time.Date(2026, 12, 6, 21, 0, 0, 0, time.UTC), BuildSecs: 12.5, LayerBytes: 1 << 20,
		BuildLog: "/home/u/.cwm/envs/0123abcd/build.log",
		Mode:     ModeOnline, ExcludeNewer: "2024-05-08T00:00:00Z", Locked: true,
		PythonFrom: &PythonProvenance{Requires: ">=3.9", From: "pyproject.toml requires-python >=3.9; tox.ini envlist 3.9 3.10",
			Wanted: "3.10", Base: "bookworm", Note: "no base offers Python 3.10; the nearest newer one the project allows"},
		Lock: []LockedPackage{{Name: "textkit", Version: "0.3.1", URL: "file:///repo", Local: true},
			{Name: "pytest", Version: "8.2.0", URL: "https://files.example/pytest-8.2.0-py3-none-any.whl", SHA256: "07acdcf88ec174f907dc01af70bf52d49b014bbab03faeeade31c96b18c2e588"}}}
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	golden.Check(t, filepath.Join("testdata", "env.json.golden"), string(data)+"\n")
}

// storeEnv writes an environment's directory by hand: env.json from
// fields (a map, so that a test can write what no Env marshals), and
// origin.json when o is set.
func storeEnv(t *testing.T, st *Store, fields map[string]any, o *Origin) string {
	t.Helper()
	dir := filepath.Join(st.Dir(), fields["id"].(string))
	if err := os.MkdirAll(filepath.Join(dir, "layer", "repo"), 0o755); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(fields)
	if err := os.WriteFile(filepath.Join(dir, ManifestFile), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if o != nil {
		b, _ := json.Marshal(o)
		if err := os.WriteFile(filepath.Join(dir, OriginFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestBaseAndLimitsAreGranted: whatever env.json says, sandboxes start on
// the base this machine granted and under limits clamped to its ceilings;
// an env.json naming another base is refused with a message that says
// what to do. Pulls of cwm before origins had kinds count as foreign.
func TestBaseAndLimitsAreGranted(t *testing.T) {
	st := NewStore(t.TempDir())
	base := t.TempDir()
	huge := map[string]any{"timeout_seconds": 3 * 365 * 24 * 3600.0, "memory_bytes": int64(1) << 50,
		"disk_bytes": int64(1) << 40, "pids": int64(1) << 40, "output_bytes": int64(1) << 50}
	d := sandbox.DefaultLimits
	defaults := sandbox.Limits{Timeout: d.Timeout, Memory: d.Memory, Pids: d.Pids, Output: d.Output, Disk: d.Disk}
	legacy := &Origin{From: "reg.example/envs/x:1", Manifest: "sha256:00"}
	for _, c := range []struct {
		name     string
		base     string
		limits   map[string]any
		origin   *Origin
		wantBase string
		want     sandbox.Limits
		err      string
	}{
		{name: "foreign, absurd limits", base: "host", limits: huge, origin: &Origin{Kind: OriginPulled}, want: defaults},
		{name: "old pull, absurd limits", base: "host", limits: huge, origin: legacy, want: defaults},
		{name: "unknown origin", base: "host", limits: huge, want: defaults},
		{name: "foreign, granted more", base: "host", limits: huge,
			origin: &Origin{Kind: OriginImported, Grant: Grant{Limits: RunLimits{Timeout: time.Hour, Memory: 8 << 30, Disk: 3 << 30}}},
			want:   sandbox.Limits{Timeout: time.Hour, Memory: 8 << 30, Pids: d.Pids, Output: d.Output, Disk: 3 << 30}},
		{name: "foreign, asks less", base: "host", limits: map[string]any{"timeout_seconds": 30, "memory_bytes": 1 << 30},
			origin: &Origin{Kind: OriginPulled},
			want:   sandbox.Limits{Timeout: 30 * time.Second, Memory: 1 << 30, Pids: d.Pids, Output: d.Output, Disk: d.Disk}},
		{name: "foreign, granted less than the defaults", base: "host", limits: map[string]any{"timeout_seconds": 0},
			origin: &Origin{Kind: OriginPulled, Grant: Grant{Limits: RunLimits{Memory: 1 << 30}}},
			want:   sandbox.Limits{Timeout: d.Timeout, Memory: 1 << 30, Pids: d.Pids, Output: d.Output, Disk: d.Disk}},
		{name: "built here, its own flags", base: base, limits: map[string]any{"timeout_seconds": 900, "memory_bytes": 8 << 30},
			origin:   &Origin{Kind: OriginBuilt, Grant: Grant{Base: base, Limits: RunLimits{Timeout: 15 * time.Minute, Memory: 8 << 30}}},
			wantBase: base, want: sandbox.Limits{Timeout: 15 * time.Minute, Memory: 8 << 30, Pids: d.Pids, Output: d.Output, Disk: d.Disk}},
		{name: "built here, env.json edited", base: base, limits: huge,
			origin:   &Origin{Kind: OriginBuilt, Grant: Grant{Base: base, Limits: RunLimits{Timeout: 15 * time.Minute, Memory: 8 << 30}}},
			wantBase: base, want: sandbox.Limits{Timeout: 15 * time.Minute, Memory: 8 << 30, Pids: d.Pids, Output: d.Output, Disk: d.Disk}},
		{name: "foreign base", base: "/etc", origin: &Origin{Kind: OriginPulled, From: "r/x:1"},
			err: "names base /etc, which this machine did not grant (it grants the host's): an artifact does not choose the sandbox's root; pull or import it again with --base DIR"},
		{name: "old pull's base", base: "/etc", origin: legacy, err: "names base /etc, which this machine did not grant"},
		{name: "unknown origin's base", base: "/etc", err: "names base /etc, which this machine did not grant"},
		{name: "built here, base edited", base: "/etc", origin: &Origin{Kind: OriginBuilt, Grant: Grant{Base: base}},
			err: "names base /etc, which this machine did not grant (it grants " + base + ")"},
		{name: "foreign, granted base", base: base, origin: &Origin{Kind: OriginPulled, Grant: Grant{Base: base}}, wantBase: base, want: defaults},
	} {
		t.Run(c.name, func(t *testing.T) {
			os.RemoveAll(filepath.Join(st.Dir(), "e"))
			storeEnv(t, st, map[string]any{"version": ManifestVersion, "id": "e", "base": c.base, "limits": c.limits, "usable": true}, c.origin)
			e, err := st.Resolve("e")
			if err != nil {
				t.Fatal(err)
			}
			cfg, err := config(e, e.Limits)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) || errkind.Of(err) != errkind.Input {
					t.Fatalf("config = %v, want an input error containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Base != c.wantBase {
				t.Errorf("base %q, want %q", cfg.Base, c.wantBase)
			}
			if diff := cmp.Diff(c.want, cfg.Limits); diff != "" {
				t.Errorf("limits (-want +got):\n%s", diff)
			}
		})
	}
}

// TestManifestCap: an env.json past MaxManifest is refused unread, with a
// message that says what to do; listing skips it.
func TestManifestCap(t *testing.T) {
	st := NewStore(t.TempDir())
	storeEnv(t, st, map[string]any{"version": ManifestVersion, "id": "big", "usable": true,
		"reason": strings.Repeat("x", MaxManifest)}, nil)
	_, err := st.Resolve("big")
	if err == nil || errkind.Of(err) != errkind.Input || !strings.Contains(err.Error(), "past the 1 MiB a manifest (env.json) may have") ||
		!strings.Contains(err.Error(), "build it again") {
		t.Errorf("Resolve(big) = %v, want the cap's input error", err)
	}
	if all, err := st.List(); err != nil || len(all) != 0 {
		t.Errorf("List = %d environments, %v; want none", len(all), err)
	}
}

// TestBaselineApart: List reads no baseline (one that cannot be read does
// not matter to it), Resolve reads it and says when it cannot.
func TestBaselineApart(t *testing.T) {
	st := NewStore(t.TempDir())
	dir := storeEnv(t, st, map[string]any{"version": ManifestVersion, "id": "e", "name": "n", "usable": true}, nil)
	os.WriteFile(filepath.Join(dir, BaselineFile), []byte(`[{"id":"t::a","status":"pass"}]`), 0o644)
	e, err := st.Resolve("n")
	if err != nil || len(e.Baseline) != 1 || e.Baseline[0].ID != "t::a" {
		t.Fatalf("Resolve = %+v, %v; want its one-test baseline", e, err)
	}
	os.WriteFile(filepath.Join(dir, BaselineFile), []byte(`not json`), 0o644)
	all, err := st.List()
	if err != nil || len(all) != 1 || all[0].Baseline != nil {
		t.Errorf("List = %v, %v; want the environment, its baseline unread", all, err)
	}
	if _, err := st.Resolve("e"); err == nil || !strings.Contains(err.Error(), BaselineFile) {
		t.Errorf("Resolve with a broken baseline = %v, want an error naming %s", err, BaselineFile)
	}
}

// TestMigrateV2: a version 2 environment's inline baseline moves to
// baseline.json, and one without an origin record (built here: pulls
// have always written one) is granted the base and limits it names.
func TestMigrateV2(t *testing.T) {
	st := NewStore(t.TempDir())
	base := t.TempDir()
	dir := storeEnv(t, st, map[string]any{"version": 2, "id": "old", "usable": true, "base": base,
		"limits":   map[string]any{"timeout_seconds": 3600, "memory_bytes": 16 << 30},
		"baseline": []map[string]any{{"id": "t::a", "status": "pass"}, {"id": "t::b", "status": "fail"}}}, nil)
	e, err := st.Resolve("old")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Baseline) != 2 || e.Version != ManifestVersion {
		t.Errorf("migrated: version %d, %d tests in the baseline; want %d, 2", e.Version, len(e.Baseline), ManifestVersion)
	}
	data, _ := os.ReadFile(filepath.Join(dir, ManifestFile))
	if strings.Contains(string(data), "t::a") {
		t.Errorf("env.json still holds the baseline after migration")
	}
	cfg, err := config(e, e.Limits)
	if err != nil || cfg.Base != base || cfg.Limits.Timeout != time.Hour || cfg.Limits.Memory != 16<<30 {
		t.Errorf("config of a migrated build = base %q limits %+v, %v; want its own base and limits", cfg.Base, cfg.Limits, err)
	}
	// A version 2 pull keeps its origin: foreign.
	storeEnv(t, st, map[string]any{"version": 2, "id": "pulled", "usable": true, "base": "host",
		"limits": map[string]any{"memory_bytes": 16 << 30}}, &Origin{From: "r/x:1", Manifest: "sha256:00"})
	p, err := st.Resolve("pulled")
	if err != nil {
		t.Fatal(err)
	}
	if !p.Origin().Foreign() || p.SandboxLimits().Memory != sandbox.DefaultLimits.Memory {
		t.Errorf("a migrated pull: origin %v, memory %d; want foreign, the default", p.Origin(), p.SandboxLimits().Memory)
	}
}

// TestMigrateLargeV2: a version 2 env.json past MaxManifest because of its
// baseline (a suite of 20,000 tests) is split as it is read; one large
// for another reason is refused, as is a version 3 one.
func TestMigrateLargeV2(t *testing.T) {
	st := NewStore(t.TempDir())
	var tests []map[string]any
	for i := range 20000 {
		tests = append(tests, map[string]any{"id": fmt.Sprintf("tests/test_m.py::test_%d", i), "status": "pass",
			"outcomes": []string{"pass", "pass", "pass"}, "seconds": []float64{0.01, 0.01, 0.01}})
	}
	dir := storeEnv(t, st, map[string]any{"version": 2, "id": "big", "name": "n", "usable": true, "base": "host", "baseline": tests}, nil)
	if fi, _ := os.Stat(filepath.Join(dir, ManifestFile)); fi.Size() <= MaxManifest {
		t.Fatalf("the test's env.json is %d bytes, want it past the cap", fi.Size())
	}
	all, err := st.List()
	if err != nil || len(all) != 1 {
		t.Fatalf("List = %d, %v; want the migrated environment", len(all), err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, ManifestFile)); fi.Size() > 4096 {
		t.Errorf("env.json is %d bytes after migration, want a few hundred", fi.Size())
	}
	e, err := st.Resolve("n")
	if err != nil || len(e.Baseline) != 20000 || e.Baseline[19999].ID != "tests/test_m.py::test_19999" || len(e.Baseline[0].Outcomes) != 3 {
		t.Fatalf("Resolve after migration: %v; want the 20000 tests", err)
	}
	for name, fields := range map[string]map[string]any{
		"v2reason": {"version": 2, "id": "v2reason", "usable": true, "reason": strings.Repeat("x", 3<<20), "baseline": tests[:1]},
		"v2test":   {"version": 2, "id": "v2test", "usable": true, "baseline": []map[string]any{{"id": strings.Repeat("x", 8<<20)}}},
		"v3":       {"version": 3, "id": "v3", "usable": true, "baseline": tests},
	} {
		storeEnv(t, st, fields, nil)
		if _, err := st.Resolve(name); err == nil || !strings.Contains(err.Error(), "past the 1 MiB a manifest (env.json) may have") {
			t.Errorf("Resolve(%s) = %v, want it refused", name, err)
		}
	}
}
