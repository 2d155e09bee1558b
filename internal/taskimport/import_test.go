package taskimport

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/env"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/task"
)

// jsonLine is a row as a JSONL line.
func jsonLine(t *testing.T, m map[string]any) string {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sweRow is a SWE-bench row of the test repository, FAIL_TO_PASS and
// PASS_TO_PASS as the published datasets store them (JSON strings).
func sweRow(r repo, id string) map[string]any {
	return map[string]any{"instance_id": id, "repo": "cwm-test/calc", "base_commit": r.base,
		"patch": r.patch, "test_patch": r.testPatch, "problem_statement": "add(2, -3) is 5, not -1",
		"hints_text": "", "created_at": "2026-01-01T00:00:00Z", "version": "0.1", "environment_setup_commit": r.base,
		"FAIL_TO_PASS": `["tests/test_calc.py::test_add_negative"]`,
		"PASS_TO_PASS": `["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"]`}
}

// A SWE-bench file and an R2E-Gym file, their images made here in each
// dataset's layout and pushed to a local registry under the names the
// rows give (SWE-bench's naming rule; R2E-Gym's docker_image), are
// imported through --registry-mirror: the images become bases by digest,
// every task is graded three times with the gold patch (all pass) and
// three times with the empty one (FAIL_TO_PASS fails), and each bad row
// and each task that does not hold is left out with its reason while the
// rest of the file is imported.
func TestImport(t *testing.T) {
	if ocitest.Binary() == "" {
		t.Skip("docker-registry (Debian's CNCF Distribution registry) is not installed: make setup installs it")
	}
	r := makeRepo(t)
	site := pytestSite(t)
	reg := ocitest.Start(t, "", "")
	push(t, sweBenchTestImage(t, r, site), reg.Host+"/swebench/sweb.eval.x86_64.cwm-test_1776_calc-1:latest")
	push(t, r2eTestImage(t, r, site), reg.Host+"/namanjain12/calc_final:0123abc")
	smith := makeSmithRepo(t)
	push(t, smithTestImage(t, smith, site), reg.Host+"/jyangballin/swesmith.x86_64.cwm-test_1776_calc.0123abcd:latest")
	push(t, rebenchTestImage(t, r, site), reg.Host+"/swerebench/sweb.eval.x86_64.cwm-test_1776_calc-1:latest")

	home := t.TempDir()
	o := Options{Mirror: reg.Host, Sandboxes: Sandboxes{Runtime: rt, Store: base.NewStore(home), Envs: env.NewStore(home)},
		Base: basebuild.Options{Runtime: rt}, Runs: 3}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()

	t.Run("swebench", func(t *testing.T) {
		img := "swebench/sweb.eval.x86_64.cwm-test_1776_calc-1:latest"
		good := sweRow(r, "cwm-test__calc-1")
		lines := []string{jsonLine(t, good), jsonLine(t, good)}
		add := func(id string, change func(m map[string]any)) {
			m := sweRow(r, id)
			change(m)
			lines = append(lines, jsonLine(t, m))
		}
		add("no-statement", func(m map[string]any) { delete(m, "problem_statement") })
		add("null-patch", func(m map[string]any) { m["patch"] = nil })
		lines = append(lines, strings.Replace(jsonLine(t, sweRow(r, "latin1")), "not -1", "not -1 \xe9t\xe9", 1))
		add("huge", func(m map[string]any) { m["problem_statement"] = strings.Repeat("x", MaxProblem+1) })
		add("edits-tests", func(m map[string]any) { m["patch"] = r.testPatch })
		add("cwm-test__calc-2", func(m map[string]any) {
			m["image_name"] = img
			m["patch"] = strings.Replace(r.patch, "return a + abs(b)", "return a + abs(b)  # not in the tree", 1)
		})
		add("cwm-test__calc-3", func(m map[string]any) {
			m["image_name"] = img
			m["patch"] = strings.Replace(r.patch, "+    return a + b", "+    return a + abs(b)  # still wrong", 1)
		})
		add("cwm-test__calc-4", func(m map[string]any) {
			m["image_name"] = img
			m["FAIL_TO_PASS"] = []any{"tests/test_calc.py::test_mul"}
		})
		add("cwm-test__calc-5", func(m map[string]any) {})
		path := filepath.Join(t.TempDir(), "swebench.jsonl")
		if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		o := o
		o.Format = "swebench"
		ts, rep, err := Import(ctx, path, o)
		if err != nil {
			t.Fatalf("Import(%s) = %v", path, err)
		}
		var got []string
		for _, l := range rep.Left {
			got = append(got, l.InstanceID+": "+l.Class)
		}
		want := []string{
			"cwm-test__calc-1: " + ReasonDuplicate,
			"no-statement: " + ReasonBadRow,
			"null-patch: " + ReasonBadRow,
			": " + ReasonBadRow,
			"huge: " + ReasonBadRow,
			"edits-tests: " + ReasonBadRow,
			"cwm-test__calc-2: " + ReasonPatch,
			"cwm-test__calc-3: " + ReasonGoldFails,
			"cwm-test__calc-4: " + ReasonNoopPasses,
			"cwm-test__calc-5: " + ReasonImageMissing,
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Import's left-out rows (-want +got):\n%s\nreport: %+v", diff, rep.Left)
		}
		reasons := map[string]string{}
		for _, l := range rep.Left {
			reasons[l.InstanceID] = l.Reason
		}
		for id, want := range map[string]string{
			"no-statement":     `missing field "problem_statement"`,
			"null-patch":       `field "patch" is null`,
			"":                 "not UTF-8 (at byte",
			"huge":             "problem_statement is 262145 bytes",
			"edits-tests":      "the gold patch touches the test file tests/test_calc.py",
			"cwm-test__calc-2": "the patch does not apply at base_commit",
			"cwm-test__calc-3": "tests/test_calc.py::test_add_negative does not pass with the gold patch (FAILED)",
			"cwm-test__calc-4": "FAIL_TO_PASS test tests/test_calc.py::test_mul passes without the fix",
			"cwm-test__calc-5": "swebench/sweb.eval.x86_64.cwm-test_1776_calc-5:latest",
		} {
			if !strings.Contains(reasons[id], want) {
				t.Errorf("reason for %q = %q, want it to contain %q", id, reasons[id], want)
			}
		}
		if len(ts) != 1 || ts[0].InstanceID != "cwm-test__calc-1" {
			t.Fatalf("Import kept %d tasks (%+v), want cwm-test__calc-1", len(ts), ts)
		}
		k := ts[0]
		if digest := rep.Images[reg.Host+"/"+img]; k.Imported.Base != digest || o.Sandboxes.Store.Get(digest) == nil {
			t.Errorf("task's base = %q, image's = %q (stored: %v)", k.Imported.Base, digest, o.Sandboxes.Store.Get(digest) != nil)
		}
		if diff := cmp.Diff([]string{"tests/test_calc.py::test_add_negative"}, k.FailToPass); diff != "" {
			t.Errorf("FAIL_TO_PASS (-want +got):\n%s", diff)
		}
		if k.Validation == nil || len(k.Validation.Checks) != 2 {
			t.Errorf("validation = %+v, want the gold and the empty checks", k.Validation)
		}
		if rep.Summary() == "" || rep.Kept != 1 || rep.Rows != 11 {
			t.Errorf("report: %d rows, %d kept; want 11 and 1: %s", rep.Rows, rep.Kept, rep.Summary())
		}
		t.Log(rep.Summary())
		checkWritten(t, ts)
		checkStages(t, ctx, home, k, r)
	})

	t.Run("r2e-gym", func(t *testing.T) {
		row := map[string]any{"repo_name": "calc", "docker_image": "namanjain12/calc_final:0123abc",
			"problem_statement": "add(2, -3) is 5, not -1", "patch": r.patch,
			"expected_output_json": `{"r2e_tests/test_calc.py::test_add": "PASSED", "r2e_tests/test_calc.py::test_add_negative": "PASSED", "r2e_tests/test_calc.py::test_mul": "PASSED"}`}
		b, _ := json.Marshal([]any{row})
		path := filepath.Join(t.TempDir(), "r2e.json")
		os.WriteFile(path, b, 0o644)
		o := o
		o.Format = "r2e-gym"
		ts, rep, err := Import(ctx, path, o)
		if err != nil {
			t.Fatalf("Import(%s) = %v", path, err)
		}
		if len(ts) != 1 {
			t.Fatalf("Import kept %d tasks, want 1: %s %+v", len(ts), rep.Summary(), rep.Left)
		}
		k := ts[0]
		if k.InstanceID != "calc_final__0123abc" || k.BaseCommit != r.base || k.Imported.HiddenTests != "/r2e_tests" {
			t.Errorf("task %s at %s, hidden tests %q; want calc_final__0123abc at %s, /r2e_tests", k.InstanceID, k.BaseCommit, k.Imported.HiddenTests, r.base)
		}
		if diff := cmp.Diff([]string{"r2e_tests/test_calc.py::test_add_negative"}, k.FailToPass); diff != "" {
			t.Errorf("FAIL_TO_PASS from expected_output_json and the empty run (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"r2e_tests/test_calc.py::test_add", "r2e_tests/test_calc.py::test_mul"}, k.PassToPass); diff != "" {
			t.Errorf("PASS_TO_PASS (-want +got):\n%s", diff)
		}
		checkWritten(t, ts)
		checkEpisode(t, ctx, home, k)
		checkServed(t, ctx, home, k, "pwd; ls /r2e_tests 2>&1 | wc -l", testbed+"\n1\n")
	})

	t.Run("swe-smith", func(t *testing.T) {
		row := map[string]any{"instance_id": "cwm-test__calc.0123abcd.func_pm_op_change__x1", "repo": "swesmith/cwm-test__calc.0123abcd",
			"image_name": "jyangballin/swesmith.x86_64.cwm-test_1776_calc.0123abcd:latest", "patch": smith.patch,
			"problem_statement": "add(2, -3) is 5", "FAIL_TO_PASS": `["tests/test_calc.py::test_add_negative"]`,
			"PASS_TO_PASS": `["tests/test_calc.py::test_add", "tests/test_calc.py::test_mul"]`}
		k := importOne(t, o, "swe-smith", row)
		if k.BugPatch != smith.patch || k.BaseCommit != smith.base || !strings.Contains(k.Patch, "+    return a + b") {
			t.Errorf("swe-smith task: bug patch %q, base %s (want %s), gold %q; want the row's patch as the bug and its reverse as the fix", k.BugPatch, k.BaseCommit, smith.base, k.Patch)
		}
		checkServed(t, ctx, home, k, "pwd", testbed+"\n")
	})

	t.Run("swe-rebench-v2", func(t *testing.T) {
		row := sweRow(r, "cwm-test__calc-1")
		row["image_name"] = "swerebench/sweb.eval.x86_64.cwm-test_1776_calc-1:latest"
		row["language"] = "Python"
		row["install_config"] = map[string]any{"test_cmd": []any{"python3 -m pytest -rA tests/test_calc.py"}, "log_parser": "parse_log_pytest_v2"}
		k := importOne(t, o, "swe-rebench-v2", row)
		if k.Imported.Workdir != "/calc" || k.Imported.LogParser != "parse_log_pytest_v2" {
			t.Errorf("swe-rebench-v2 task: workdir %q, parser %q; want /calc, parse_log_pytest_v2", k.Imported.Workdir, k.Imported.LogParser)
		}
		checkServed(t, ctx, home, k, "pwd", "/calc\n")
	})
}

// importOne imports a file of one row of format and returns its task,
// which must hold.
func importOne(t *testing.T, o Options, format string, row map[string]any) task.Task {
	t.Helper()
	path := filepath.Join(t.TempDir(), format+".jsonl")
	os.WriteFile(path, []byte(jsonLine(t, row)+"\n"), 0o644)
	o.Format = format
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	ts, rep, err := Import(ctx, path, o)
	if err != nil {
		t.Fatalf("Import(%s) = %v", path, err)
	}
	if len(ts) != 1 {
		t.Fatalf("Import kept %d tasks, want 1: %s %+v", len(ts), rep.Summary(), rep.Left)
	}
	checkWritten(t, ts)
	return ts[0]
}

// checkWritten writes ts as a tasks file and loads it back as every
// stage does.
func checkWritten(t *testing.T, ts []task.Task) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tasks.jsonl")
	var b []byte
	for _, k := range ts {
		line, err := json.Marshal(k)
		if err != nil {
			t.Fatal(err)
		}
		b = append(append(b, line...), '\n')
	}
	os.WriteFile(path, b, 0o644)
	got, err := task.Load(path)
	if err != nil {
		t.Fatalf("task.Load of the imported tasks: %v", err)
	}
	if diff := cmp.Diff(ts, got); diff != "" {
		t.Errorf("imported tasks after a round trip (-want +got):\n%s", diff)
	}
}
