package taskimport

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/parquet-go/parquet-go"

	"cwm/internal/task"
)

const fix = "diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n+++ b/calc/__init__.py\n@@ -1 +1 @@\n-x\n+y\n"
const testFix = "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n+++ b/tests/test_calc.py\n@@ -1 +1 @@\n-x\n+y\n"

func sweFields() map[string]any {
	return map[string]any{"instance_id": "django__django-11099", "repo": "django/django", "base_commit": "abc",
		"patch": fix, "test_patch": testFix, "problem_statement": "p", "FAIL_TO_PASS": `["t1"]`, "PASS_TO_PASS": `["t2"]`}
}

func with(m map[string]any, kv ...any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == "DELETE" {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// Each format's row becomes a task with its dataset's image, working
// directory, PATH, test command, parser and hidden tests (the table of
// docs/tasks.md); a row with a field missing, null or of the wrong type
// is a reason naming the field.
func TestInstance(t *testing.T) {
	for _, tc := range []struct {
		name, format string
		fields       map[string]any
		want         task.Imported
		err          string
	}{
		{"swebench", "swebench", sweFields(), task.Imported{Format: "swebench",
			Image: "swebench/sweb.eval.x86_64.django_1776_django-11099:latest", Workdir: "/testbed",
			Path: []string{"/opt/miniconda3/envs/testbed/bin"}, LogParser: "parse_log_django",
			TestCommand: "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1 test_calc",
			TestFiles:   []string{"tests/test_calc.py"}}, ""},
		{"swebench's own eval script", "swebench", with(sweFields(), "eval_script", "#!/bin/bash\necho hi", "log_parser", "parse_log_pytest", "image_name", "x/y:1"),
			task.Imported{Format: "swebench", Image: "x/y:1", Workdir: "/testbed", Path: []string{"/opt/miniconda3/envs/testbed/bin"},
				LogParser: "parse_log_pytest", TestCommand: "#!/bin/bash\necho hi", OwnScript: true, TestFiles: []string{"tests/test_calc.py"}}, ""},
		{"swe-gym", "swe-gym", with(sweFields(), "repo", "getmoto/moto", "instance_id", "getmoto__moto-5752"), task.Imported{Format: "swe-gym",
			Image: "xingyaoww/sweb.eval.x86_64.getmoto_s_moto-5752:latest", Workdir: "/testbed",
			Path: []string{"/opt/miniconda3/envs/testbed/bin"}, LogParser: "parse_log_pytest",
			TestCommand: pytestRA + " tests/test_calc.py", TestFiles: []string{"tests/test_calc.py"}}, ""},
		{"swe-smith", "swe-smith", with(sweFields(), "image_name", "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536", "base_commit", "DELETE"),
			task.Imported{Format: "swe-smith", Image: "jyangballin/swesmith.x86_64.oauthlib_1776_oauthlib.1fd52536", Workdir: "/testbed",
				Path: []string{"/opt/miniconda3/envs/testbed/bin"}, LogParser: "parse_log_pytest",
				TestCommand: "pytest --disable-warnings --color=no --tb=no -rA", TestFiles: []string{"tests/test_calc.py"}}, ""},
		{"r2e-gym", "r2e-gym", map[string]any{"repo_name": "pandas", "docker_image": "namanjain12/pandas_final:0a1b", "problem_statement": "p",
			"patch": fix, "expected_output_json": map[string]any{"r2e_tests/test_a.py::test_x": "PASSED"}},
			task.Imported{Format: "r2e-gym", Image: "namanjain12/pandas_final:0a1b", Workdir: "/testbed", Path: []string{"/testbed/.venv/bin"},
				LogParser: "parse_log_pytest", TestCommand: "bash run_tests.sh", HiddenTests: "/r2e_tests",
				Expected: map[string]string{"r2e_tests/test_a.py::test_x": "PASSED"}}, ""},
		{"swe-rebench-v2", "swe-rebench-v2", with(sweFields(), "repo", "owner/widget", "image_name", "swerebench/sweb.eval.x86_64.owner_1776_widget-7",
			"install_config", `{"test_cmd": ["pytest -rA tests"], "log_parser": "parse_log_pytest_v2"}`, "language", "Python"),
			task.Imported{Format: "swe-rebench-v2", Image: "swerebench/sweb.eval.x86_64.owner_1776_widget-7", Workdir: "/widget",
				LogParser: "parse_log_pytest_v2", TestCommand: "pytest -rA tests", TestFiles: []string{"tests/test_calc.py"}}, ""},
		{"rebench other language", "swe-rebench-v2", with(sweFields(), "language", "Go"), task.Imported{}, "language Go: only Python rows"},
		{"rebench unknown parser", "swe-rebench-v2", with(sweFields(), "image_name", "a/b", "install_config", map[string]any{"test_cmd": "t", "log_parser": "parse_log_nope"}),
			task.Imported{}, `unknown log parser "parse_log_nope"`},
		{"missing", "swebench", with(sweFields(), "base_commit", "DELETE"), task.Imported{}, `missing field "base_commit"`},
		{"null", "swebench", with(sweFields(), "repo", nil), task.Imported{}, `field "repo" is null`},
		{"wrong type", "swebench", with(sweFields(), "patch", 3.0), task.Imported{}, `field "patch" is a number, want a string`},
		{"F2P not a list", "swebench", with(sweFields(), "FAIL_TO_PASS", "t1"), task.Imported{}, `field "FAIL_TO_PASS" is a string that is not a JSON list`},
		{"F2P empty", "swebench", with(sweFields(), "FAIL_TO_PASS", "[]"), task.Imported{}, "FAIL_TO_PASS is empty"},
		{"huge", "swebench", with(sweFields(), "problem_statement", strings.Repeat("x", MaxProblem+1)), task.Imported{}, "problem_statement is 262145 bytes"},
		{"gold edits tests", "swebench", with(sweFields(), "patch", testFix), task.Imported{}, "the gold patch touches the test file tests/test_calc.py"},
		{"r2e bad expected", "r2e-gym", map[string]any{"docker_image": "a/b:c", "problem_statement": "p", "patch": fix, "expected_output_json": "nope"},
			task.Imported{}, `field "expected_output_json" is a string that is not a JSON object`},
	} {
		got, err := instance(tc.format, row{n: 1, fields: tc.fields})
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: instance = %v, want an error containing %q", tc.name, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: instance = %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, *got.Imported); diff != "" {
			t.Errorf("%s: Imported (-want +got):\n%s", tc.name, diff)
		}
	}
}

// SWE-smith's patch makes the bug: it becomes the bug patch, and the gold
// fix is computed in the image.
func TestSweSmithBugPatch(t *testing.T) {
	got, err := instance("swe-smith", row{n: 1, fields: with(sweFields(), "image_name", "a/b")})
	if err != nil || got.BugPatch != fix || got.Patch != "" {
		t.Errorf("instance(swe-smith) = bug %q, patch %q, %v; want the row's patch as the bug", got.BugPatch, got.Patch, err)
	}
}

// Rows come from JSONL, a JSON list, or Parquet (string columns, as the
// published files have, FAIL_TO_PASS a JSON string), the same fields
// from each; a line that is not UTF-8 or not an object is a bad row.
func TestReadRows(t *testing.T) {
	dir := t.TempDir()
	type pqRow struct {
		ID     string `parquet:"instance_id"`
		F2P    string `parquet:"FAIL_TO_PASS"`
		Config struct {
			TestCmd string `parquet:"test_cmd"`
		} `parquet:"install_config"`
	}
	pq := filepath.Join(dir, "rows.parquet")
	r := pqRow{ID: "a", F2P: `["t1"]`}
	r.Config.TestCmd = "pytest"
	f, _ := os.Create(pq)
	if err := parquet.Write(f, []pqRow{r, {ID: "b\xff"}}); err != nil {
		t.Fatal(err)
	}
	f.Close()
	os.WriteFile(filepath.Join(dir, "rows.jsonl"), []byte(`{"instance_id": "a", "FAIL_TO_PASS": "[\"t1\"]", "install_config": {"test_cmd": "pytest"}}`+"\n\n[1]\n{\"instance_id\": \"b\xff\"}\n"), 0o644)
	os.WriteFile(filepath.Join(dir, "rows.json"), []byte(`[{"instance_id": "a", "FAIL_TO_PASS": "[\"t1\"]", "install_config": {"test_cmd": "pytest"}}, 3]`), 0o644)
	for _, name := range []string{"rows.parquet", "rows.jsonl", "rows.json"} {
		rows, err := readRows(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("readRows(%s) = %v", name, err)
		}
		if len(rows) < 2 || rows[0].bad != "" {
			t.Fatalf("readRows(%s) = %+v, want a good row and a bad one", name, rows)
		}
		id, _ := rows[0].str("instance_id")
		f2p, _ := rows[0].tests("FAIL_TO_PASS")
		cfg, _ := rows[0].object("install_config")
		if id != "a" || !cmp.Equal(f2p, []string{"t1"}) || cfg["test_cmd"] != "pytest" {
			t.Errorf("readRows(%s)[0] = %q %v %v, want a [t1] pytest", name, id, f2p, cfg)
		}
		if rows[len(rows)-1].bad == "" {
			t.Errorf("readRows(%s): the last row (%+v) is not bad", name, rows[len(rows)-1])
		}
	}
	if _, err := readRows(filepath.Join(dir, "none.jsonl")); err == nil || !strings.Contains(err.Error(), "no such file") {
		t.Errorf("readRows of a missing file = %v, want no such file", err)
	}
}

// --registry-mirror keeps an image's repository and tag or digest under
// the mirror's host.
func TestMirrored(t *testing.T) {
	for _, tc := range []struct{ ref, mirror, want string }{
		{"swebench/sweb.eval.x86_64.a_1776_b-1:latest", "127.0.0.1:5000", "127.0.0.1:5000/swebench/sweb.eval.x86_64.a_1776_b-1:latest"},
		{"ghcr.io/o/img@sha256:" + strings.Repeat("a", 64), "m.example", "m.example/o/img@sha256:" + strings.Repeat("a", 64)},
		{"python", "m.example", "m.example/library/python:latest"},
		{"swebench/x:1", "", "swebench/x:1"},
	} {
		if got, err := mirrored(tc.ref, tc.mirror); err != nil || got != tc.want {
			t.Errorf("mirrored(%q, %q) = %q, %v; want %q", tc.ref, tc.mirror, got, err, tc.want)
		}
	}
}
