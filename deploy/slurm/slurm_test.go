package slurm_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/envoci/ocitest"
)

// root is the repository's directory.
const root = "../.."

var (
	buildOnce sync.Once
	cwmBin    string
	buildErr  error
)

// cwmBinary builds cwm once for the package's tests.
func cwmBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "cwm-slurm-bin-")
		if err != nil {
			buildErr = err
			return
		}
		cwmBin = filepath.Join(dir, "cwm")
		cmd := exec.Command("go", "build", "-o", cwmBin, "./cmd/cwm")
		cmd.Dir = root
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return cwmBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cwmBin != "" {
		os.RemoveAll(filepath.Dir(cwmBin))
	}
	os.Exit(code)
}

// run runs cwm with env added, and returns its stdout and how long it took.
func run(t testing.TB, env []string, args ...string) (string, time.Duration) {
	t.Helper()
	cmd := exec.Command(cwmBinary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	start := time.Now()
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("cwm %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), time.Since(start)
}

// submit submits a stage with deploy/slurm/submit.sh and returns the
// array's and the merge's job ids and when it submitted them.
func submit(t testing.TB, c *cluster, env []string, stage string, n int, args ...string) (string, string, time.Time) {
	t.Helper()
	abs, _ := filepath.Abs("submit.sh")
	cmd := c.cmd(abs, append([]string{stage, fmt.Sprint(n)}, args...)...)
	cmd.Env = append(cmd.Env, env...)
	cmd.Env = append(cmd.Env, "CWM="+cwmBinary(t))
	cmd.Dir = c.dir // the jobs' output files go there
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("submit.sh %s %d: %v\n%s", stage, n, err, out)
	}
	ids := strings.Fields(string(out))
	if len(ids) != 2 {
		t.Fatalf("submit.sh printed %q, want two job ids", out)
	}
	return ids[0], ids[1], start
}

// jobOutputs is what the jobs printed, for a failure's message.
func jobOutputs(c *cluster) string {
	files, _ := filepath.Glob(filepath.Join(c.dir, "*.out"))
	var b strings.Builder
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(&b, "== %s\n%s\n", filepath.Base(f), data)
	}
	return b.String()
}

// expectDone checks that every job of ids completed.
func expectDone(t testing.TB, c *cluster, ids ...string) {
	t.Helper()
	for _, s := range c.jobStates(t, ids...) {
		if s != "COMPLETED" {
			t.Fatalf("jobs %v: a job ended %s\n%s\n%s", ids, s, jobOutputs(c), c.logs())
		}
	}
}

// lines reads a JSONL file into its objects by key, with drop's fields
// (those a run's clock decides) removed.
func lines(t testing.TB, path, key string, drop func(map[string]any)) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		k, _ := m[key].(string)
		if _, dup := out[k]; dup {
			t.Fatalf("%s: key %q twice", path, k)
		}
		drop(m)
		out[k] = m
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// TestTraceFuncArray traces CruxEval as a 4-task job array and checks
// that the merged output is the single-process run's: the same ids and
// the same traces (the stats' times aside). It logs both wall times.
func TestTraceFuncArray(t *testing.T) {
	needCluster(t)
	c := startCluster(t, 2)
	work := t.TempDir()
	in, _ := filepath.Abs(filepath.Join(root, "internal", "tracer", "testdata", "cruxeval.jsonl"))
	home := []string{"CWM_HOME=" + filepath.Join(work, "node")}

	single := filepath.Join(work, "single.jsonl")
	_, singleTime := run(t, home, "trace", "func", "--in", in, "--out", single, "--workers", "2")

	out := filepath.Join(work, "out")
	env := append(home, "OUT_DIR="+out, "IN="+in)
	array, merge, start := submit(t, c, env, "trace-func", 4)
	arrayEnd := c.wait(t, 20*time.Minute, array)
	c.wait(t, 5*time.Minute, merge)
	expectDone(t, c, array, merge)
	report, _ := os.ReadFile(filepath.Join(out, "traces.merge.txt"))
	t.Logf("merge report:\n%s", report)

	noTimes := func(m map[string]any) { delete(m, "stats") }
	want := lines(t, single, "id", noTimes)
	got := lines(t, filepath.Join(out, "traces.jsonl"), "id", noTimes)
	if diff := cmp.Diff(sortedKeys(want), sortedKeys(got)); diff != "" {
		t.Fatalf("merged ids (-single process +array):\n%s", diff)
	}
	for k, w := range want {
		if diff := cmp.Diff(w, got[k]); diff != "" {
			t.Errorf("trace %s (-single process +array):\n%s", k, diff)
		}
	}
	arrayTime := arrayEnd.Sub(start)
	t.Logf("trace func on CruxEval (%d functions), 2 CPUs: single process (--workers 2) %.1fs; 4-task array, 1 CPU each, submit to last task %.1fs (ratio %.2f)",
		len(want), singleTime.Seconds(), arrayTime.Seconds(), arrayTime.Seconds()/singleTime.Seconds())
}

// mutateFlags are the tasks mutate run of the test: a few functions, one
// task each, so that it is short and --per-function is exercised. The
// environment's baseline is timed once, and the array's tasks run beside
// each other on this one node: a generous timeout factor keeps a loaded
// machine from calling the unmutated suite hung in one run and not in the
// other.
var mutateFlags = []string{"--functions", "snake_case,kebab_case,hamming,levenshtein,mean,median,center,truncate",
	"--families", "operators", "--per-function", "1", "--seed", "1", "--timeout-factor", "10"}

// TestTasksMutateArray builds the example's environment, pushes it to a
// registry on loopback (the CNCF Distribution registry), and makes
// mutate-fix tasks from it as a 4-task job array whose tasks pull it on a
// fresh node's store; the merged tasks (and decisions) are those of one
// process.
func TestTasksMutateArray(t *testing.T) {
	needCluster(t)
	reg := ocitest.Start(t, "", "")
	c := startCluster(t, 2)
	work := t.TempDir()
	textkit, _ := filepath.Abs(filepath.Join(root, "examples", "textkit"))
	builder := []string{"CWM_HOME=" + filepath.Join(work, "builder")}
	run(t, builder, "env", "build", "--runs", "1", "--name", "textkit", "--quiet", textkit)
	pushed, _ := run(t, builder, "env", "push", "textkit", reg.Host+"/cwm/textkit")
	ref := strings.TrimSpace(pushed)

	single := filepath.Join(work, "single.jsonl")
	_, singleTime := run(t, []string{"CWM_HOME=" + filepath.Join(work, "single-node")},
		append([]string{"tasks", "mutate", "--env", ref, "--out", single, "--quiet"}, mutateFlags...)...)

	out := filepath.Join(work, "out")
	env := []string{"CWM_HOME=" + filepath.Join(work, "node"), "OUT_DIR=" + out, "ENV=" + ref, "CWM_ENVS=" + ref}
	array, merge, start := submit(t, c, env, "tasks-mutate", 4, mutateFlags...)
	arrayEnd := c.wait(t, 30*time.Minute, array)
	c.wait(t, 5*time.Minute, merge)
	expectDone(t, c, array, merge)
	report, _ := os.ReadFile(filepath.Join(out, "tasks.merge.txt"))
	t.Logf("merge report:\n%s", report)

	// What the clock decides: when a task was made, how long its
	// validation took and how many test runs the shard's shared gold
	// runs saved it.
	noTimes := func(m map[string]any) {
		delete(m, "created_at")
		if v, ok := m["validation"].(map[string]any); ok {
			delete(v, "seconds")
			delete(v, "tests_run")
		}
		delete(m, "seconds")
		delete(m, "tests_run")
		delete(m, "stages")
	}
	want := lines(t, single, "instance_id", noTimes)
	got := lines(t, filepath.Join(out, "tasks.jsonl"), "instance_id", noTimes)
	if len(want) == 0 {
		t.Fatalf("the single-process run made no task")
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("merged tasks (-single process +array):\n%s", diff)
	}
	t.Logf("tasks mutate on the example (%d tasks), 2 CPUs: single process (pull included) %.1fs; 4-task array, 2 CPUs each, submit to last task %.1fs (ratio %.2f)",
		len(want), singleTime.Seconds(), arrayEnd.Sub(start).Seconds(), arrayEnd.Sub(start).Seconds()/singleTime.Seconds())
	wantDec := lines(t, single+".decisions.jsonl", "key", noTimes)
	gotDec := lines(t, filepath.Join(out, "tasks.jsonl.decisions.jsonl"), "key", noTimes)
	if diff := cmp.Diff(wantDec, gotDec); diff != "" {
		t.Errorf("merged decisions (-single process +array):\n%s", diff)
	}
}
