package taskexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/logparse"
	"cwm/internal/pytestenv"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// swebenchRequirements pins swebench 5.0.2 and what its grading import
// needs.
const swebenchRequirements = "testdata/swebench.txt"

// gradeScript runs in the swebench venv. "specs" writes the eval script
// swebench's own make_test_spec makes of each instance (with the exit
// code recording it adds); "grade" reads each instance's logs with
// get_logs_eval through get_eval_report and prints the resolution
// status of each run.
const gradeScript = `
import json, sys
from swebench.harness.utils import make_test_spec
from swebench.harness.grading import get_eval_report, get_resolution_status
insts = [json.loads(l) for l in open(sys.argv[2])]
out = sys.argv[3]
if sys.argv[1] == "specs":
    for i in insts:
        open(out + "/" + i["instance_id"] + ".sh", "w").write(make_test_spec(i).eval_script)
else:
    res = {}
    for i in insts:
        spec = make_test_spec(i)
        res[i["instance_id"]] = {}
        for run in ("gold", "empty"):
            pred = {"instance_id": i["instance_id"], "model_name_or_path": "cwm-test",
                    "model_patch": i["patch"] if run == "gold" else ""}
            rep = get_eval_report(spec, pred, out + "/" + i["instance_id"] + "." + run + ".log", True)[i["instance_id"]]
            res[i["instance_id"]][run] = get_resolution_status(rep["tests_status"]) if "tests_status" in rep else "NO_LOG"
    print(json.dumps(res))
`

// TestExportGrading exports mutate-fix tasks of the example repository
// for SWE-bench and grades them with swebench 5.0.2's own code: each
// instance's eval script, as swebench's make_test_spec gives it, runs in
// cwm's sandbox on the instance's buggy tree (the tree of base_commit)
// with the gold patch and with no patch, and swebench's get_eval_report
// reads the logs: RESOLVED_FULL for every gold run, RESOLVED_NO for every
// empty one. base_commit is checked to be a real commit of the mirror
// holding the bug, at which the gold patch applies. The same tasks
// exported for Harbor give reward 1 for the gold patch, 0 for none, and
// two of the directories, imported back with cwm tasks import --format
// harbor (their images pushed to a local registry), hold again. The
// environment is built on the Debian bookworm base, so the export writes
// images; the first task's runs with umoci and runc (checkImages).
func TestExportGrading(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an environment, mutates it and grades with swebench")
	}
	py := pytestenv.Python(t, swebenchRequirements)
	imageTools(t)
	t0 := time.Now()
	e, ts := textkitTasks(t, 8)
	t.Logf("environment on bookworm and %d tasks in %.0fs", len(ts), time.Since(t0).Seconds())
	out, insts, _ := checkSWEBench(t, py, ts, true)
	for _, in := range insts {
		checkBaseCommit(t, out, e, in)
	}
	checkHarbor(t, ts, 2)
	checkImages(t, e, out, insts[:1])
}

// exportCounts are what an export's check counted.
type exportCounts struct {
	tasks, exported, leftOutTests, gold, empty int
	dropped                                    []string
}

func (c exportCounts) String() string {
	return fmt.Sprintf("%d tasks, %d exported (dropped %d: %v), %d test ids left out; swebench 5.0.2: gold RESOLVED_FULL %d of %d, empty RESOLVED_NO %d of %d",
		c.tasks, c.exported, len(c.dropped), c.dropped, c.leftOutTests, c.gold, c.exported, c.empty, c.exported)
}

// checkSWEBench exports ts for SWE-bench and grades them with swebench
// 5.0.2's own code: each instance's eval script, as swebench's
// make_test_spec gives it, runs in cwm's sandbox on the instance's tree
// (its environment's, with the task's bug applied: base_commit's tree)
// with the gold patch and with no patch, and swebench's get_eval_report
// reads the logs: RESOLVED_FULL for every gold run, RESOLVED_NO for
// every empty one. Every test id kept must be its own parser key. With
// images, every environment's image must be written; without, none is
// (the grading runs in cwm's sandbox and does not need them).
func checkSWEBench(t *testing.T, py string, ts []task.Task, images bool) (string, []Instance, exportCounts) {
	t.Helper()
	ctx := context.Background()
	out := t.TempDir()
	store := env.NewStore(testHome)
	sum, err := SWEBench(ctx, testSandboxes, ts, out, Options{Store: store, NoImages: !images})
	if err != nil {
		t.Fatalf("SWEBench: %v", err)
	}
	c := exportCounts{tasks: sum.Tasks, exported: sum.Exported, leftOutTests: sum.LeftOutTests}
	for _, d := range sum.Dropped {
		c.dropped = append(c.dropped, fmt.Sprintf("%s: %s", d.InstanceID, d.Reason))
	}
	sort.Strings(c.dropped)
	if sum.Exported+len(sum.Dropped) != len(ts) {
		t.Fatalf("exported %d + dropped %d != %d tasks", sum.Exported, len(sum.Dropped), len(ts))
	}
	if sum.Exported == 0 || (images && len(sum.NoImage) != 0) {
		t.Fatalf("exported %d, no image: %v", sum.Exported, sum.NoImage)
	}
	insts, err := ReadInstances(filepath.Join(out, InstancesFile))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]task.Task{}
	for _, tk := range ts {
		byID[tk.InstanceID] = tk
	}
	for _, in := range insts {
		for _, id := range append(append([]string{}, in.FailToPass...), in.PassToPass...) {
			if logparse.PytestKey(id) != id {
				t.Errorf("%s: test id %q is not its own parser key", in.InstanceID, id)
			}
		}
	}
	scripts := t.TempDir()
	python(t, py, "specs", filepath.Join(out, InstancesFile), scripts)
	sbs := map[string]*sandbox.Sandbox{}
	defer func() {
		for _, sb := range sbs {
			sb.Close()
		}
	}()
	for _, in := range insts {
		tk := byID[in.InstanceID]
		sb := sbs[tk.EnvID]
		if sb == nil {
			if sb, err = testSandboxes.Open(ctx, store.Get(tk.EnvID)); err != nil {
				t.Fatal(err)
			}
			sbs[tk.EnvID] = sb
		}
		script, err := os.ReadFile(filepath.Join(scripts, in.InstanceID+".sh"))
		if err != nil {
			t.Fatal(err)
		}
		for _, run := range []string{"gold", "empty"} {
			patch := ""
			if run == "gold" {
				patch = in.Patch
			}
			log := runEval(t, sb, tk.BugPatch, patch, string(script))
			if err := os.WriteFile(filepath.Join(scripts, in.InstanceID+"."+run+".log"), log, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	var got map[string]map[string]string
	if err := json.Unmarshal(python(t, py, "grade", filepath.Join(out, InstancesFile), scripts), &got); err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		r := got[in.InstanceID]
		if r["gold"] == "RESOLVED_FULL" {
			c.gold++
		} else {
			t.Errorf("%s: gold patch graded %s by swebench, want RESOLVED_FULL; log %s", in.InstanceID, r["gold"], filepath.Join(scripts, in.InstanceID+".gold.log"))
		}
		if r["empty"] == "RESOLVED_NO" {
			c.empty++
		} else {
			t.Errorf("%s: empty patch graded %s by swebench, want RESOLVED_NO", in.InstanceID, r["empty"])
		}
	}
	t.Logf("swebench: %s", c)
	return out, insts, c
}

// checkBaseCommit checks, with the host's git on the export's mirror,
// that base_commit is a commit whose tree differs from the environment's
// and at which the gold patch applies.
func checkBaseCommit(t *testing.T, out string, e *env.Env, in Instance) {
	t.Helper()
	mirror := filepath.Join(out, in.Mirror)
	if got := gitOut(t, mirror, "rev-parse", "refs/heads/"+in.InstanceID); got != in.BaseCommit {
		t.Errorf("%s: branch at %s, want base_commit %s", in.InstanceID, got, in.BaseCommit)
	}
	if gitOut(t, mirror, "rev-parse", in.BaseCommit+"^") != e.Commit {
		t.Errorf("%s: base_commit's parent is not the environment's commit %s", in.InstanceID, e.Commit)
	}
	wt := t.TempDir()
	archive := exec.Command("bash", "-c", `git --git-dir="$1" archive "$2" | tar -x -C "$3" && cd "$3" && git apply --check -`, "check", mirror, in.BaseCommit, wt)
	archive.Stdin = strings.NewReader(in.Patch)
	if b, err := archive.CombinedOutput(); err != nil {
		t.Errorf("%s: the gold patch does not apply at base_commit: %v\n%s", in.InstanceID, err, b)
	}
}

func gitOut(t *testing.T, gitDir string, args ...string) string {
	t.Helper()
	b, err := exec.Command("git", append([]string{"--git-dir=" + gitDir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, b)
	}
	return strings.TrimSpace(string(b))
}

// runEval makes sb's tree the buggy tree (the environment's with
// bugPatch: base_commit's tree), applies patch as SWE-bench's harness
// does (git apply -v) and runs script, returning its output.
func runEval(t *testing.T, sb *sandbox.Sandbox, bugPatch, patch, script string) []byte {
	t.Helper()
	ctx := context.Background()
	if err := sb.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{"/tmp/bug.patch": bugPatch, "/tmp/eval.sh": script, "/tmp/patch.diff": patch}
	for name, text := range files {
		if err := sb.WriteFile(ctx, name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	apply := "true"
	if bugPatch != "" { // an issue-fix task's tree is its environment's
		apply += " && git apply /tmp/bug.patch"
	}
	if patch != "" {
		apply += " && git apply -v /tmp/patch.diff"
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Shell: apply + " && bash /tmp/eval.sh 2>&1", Dir: env.RepoRoot, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reason != sandbox.ReasonNone {
		t.Fatalf("eval script stopped: %s", res.Describe())
	}
	return res.Stdout
}

func python(t *testing.T, py string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(py, append([]string{"-c", gradeScript}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		t.Fatalf("swebench %s: %v\n%s", args[0], err, stderr.String())
	}
	return b
}
