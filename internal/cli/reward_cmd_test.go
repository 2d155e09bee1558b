package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/batch"
	"cwm/internal/command"
	"cwm/internal/reward"
)

// calcRepo writes a small buggy repository (div returns 0 for a zero
// divisor) and returns its directory and a function that turns changed
// files into a git patch against it.
func calcRepo(t *testing.T) (string, func(files map[string]string) string) {
	t.Helper()
	files := map[string]string{
		"calc.py": "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    if b == 0:\n        return 0\n    return a / b\n",
		"tests/test_calc.py": "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n" +
			"def test_div():\n    assert div(6, 3) == 2\n",
	}
	write := func(dir string, files map[string]string) {
		for name, content := range files {
			p := filepath.Join(dir, name)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	src := filepath.Join(t.TempDir(), "calc")
	write(src, files)
	diff := func(change map[string]string) string {
		dir := t.TempDir()
		git := func(args ...string) string {
			out, err := exec.Command("git", append([]string{"-C", dir, "-c", "user.name=t", "-c", "user.email=t@t"}, args...)...).CombinedOutput()
			if err != nil {
				t.Fatalf("git %v: %v\n%s", args, err, out)
			}
			return string(out)
		}
		git("init", "-q")
		write(dir, files)
		git("add", "-A")
		git("commit", "-q", "-m", "base")
		write(dir, change)
		git("add", "-A")
		return git("diff", "--cached")
	}
	return src, diff
}

// runCommand runs one command as Run would, with its flags parsed, but
// without looking it up by name, and with its log discarded.
func runCommand(t *testing.T, c command.Command, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	e := &command.Env{Stdin: strings.NewReader(""), Stdout: &out, Stderr: &errb, Home: command.DefaultHome(), Log: slog.New(slog.DiscardHandler)}
	code := command.Exec(context.Background(), e, c, args)
	return code, out.String(), errb.String()
}

func writeJSONL(t *testing.T, path string, lines ...any) {
	t.Helper()
	var b strings.Builder
	for _, l := range lines {
		data, err := json.Marshal(l)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(data)
		b.WriteByte('\n')
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readJSONL(t *testing.T, path string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("%s: %v: %s", path, err, line)
		}
		out = append(out, m)
	}
	return out
}

// TestRewardCommand grades SWE-bench predictions and cwm forage
// trajectories against a task on a real environment, end to end.
func TestRewardCommand(t *testing.T) {
	t.Setenv("CWM_HOME", t.TempDir())
	src, diff := calcRepo(t)
	code, out, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "1", "--no-coverage", "--quiet", src)
	if code != 0 {
		t.Fatalf("env build = %d\n%s%s", code, out, errOut)
	}
	envID := strings.TrimSpace(out)
	fixed := "def add(a, b):\n    return a + b\n\n\ndef div(a, b):\n    if b == 0:\n        raise ZeroDivisionError\n    return a / b\n"
	gold := diff(map[string]string{"calc.py": fixed})
	wrong := diff(map[string]string{"calc.py": strings.Replace(fixed, "raise ZeroDivisionError", "return None", 1)})
	testPatch := diff(map[string]string{"tests/test_calc.py": "from calc import add, div\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n" +
		"def test_div():\n    assert div(6, 3) == 2\n\n\ndef test_div_zero():\n    import pytest\n    with pytest.raises(ZeroDivisionError):\n        div(1, 0)\n"})
	dir := t.TempDir()
	tasks := filepath.Join(dir, "tasks.jsonl")
	writeJSONL(t, tasks, map[string]any{
		"instance_id": "calc__calc-1", "repo": "calc/calc", "patch": gold, "test_patch": testPatch,
		"FAIL_TO_PASS": []string{"tests/test_calc.py::test_div_zero"},
		"PASS_TO_PASS": []string{"tests/test_calc.py::test_add", "tests/test_calc.py::test_div"}, "env_id": envID,
	})

	t.Run("predictions", func(t *testing.T) {
		in, scored := filepath.Join(dir, "preds.jsonl"), filepath.Join(dir, "preds-scored.jsonl")
		writeJSONL(t, in,
			map[string]any{"instance_id": "calc__calc-1", "model_patch": gold, "model_name_or_path": "m1"},
			map[string]any{"instance_id": "other__repo-7", "model_patch": gold, "model_name_or_path": "m1"},
			map[string]any{"instance_id": "calc__calc-1", "model_patch": wrong, "model_name_or_path": "m2"},
			map[string]any{"hello": "world"},
		)
		code, out, errOut := runCommand(t, &rewardCmd{}, "--tasks", tasks, "--in", in, "--out", scored, "--reward", "cwm")
		if code != 1 {
			t.Fatalf("cwm reward = %d, want 1 (a line is neither kind)\n%s%s", code, out, errOut)
		}
		for _, want := range []string{"skipped 1 lines whose task is not in", "other__repo-7", "preds.jsonl:4: not a prediction or trajectory"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("stderr lacks %q:\n%s", want, errOut)
			}
		}
		if !strings.Contains(out, "2 lines scored (2 now, 0 before), 1 skipped (unknown task)") || !strings.Contains(out, "resolved 1/2 (50.0%)") {
			t.Errorf("summary:\n%s", out)
		}
		lines := readJSONL(t, scored)
		got := map[string][]any{}
		for _, l := range lines {
			got[l["model_name_or_path"].(string)] = []any{l["resolved"], l["reward"], l["apply"], l["graded_patch"], l["sample"], l["advantage"], l["model_patch"] != nil}
		}
		// One sample per task and model: no advantage. The wrong fix is
		// close to the gold one: reward 0 under the paper's mapping.
		want := map[string][]any{
			"m1": {true, 1.0, "git-apply", "model_patch", 0.0, nil, true},
			"m2": {false, 0.0, "git-apply", "model_patch", 0.0, nil, true},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("scored predictions (-want +got):\n%s", diff)
		}
		for _, l := range lines {
			if l["model_name_or_path"] == "m2" {
				tests := l["hidden_tests"].([]any)
				first := tests[0].(map[string]any)
				if first["id"] != "tests/test_calc.py::test_div_zero" || first["set"] != "FAIL_TO_PASS" || first["outcome"] != "fail" || len(tests) != 3 {
					t.Errorf("hidden_tests of the wrong fix = %v", tests)
				}
				if s := l["similarity"].(float64); s < 0.5 || s >= 1 {
					t.Errorf("similarity of the wrong fix = %v, want in [0.5, 1)", s)
				}
			}
		}
		// Resuming skips what is done; binary rewards are asked for but
		// nothing is regraded.
		code, out, _ = runCommand(t, &rewardCmd{}, "--tasks", tasks, "--in", in, "--out", scored, "--json", "--reward", "binary")
		var sum reward.ScoreSummary
		if err := json.Unmarshal([]byte(out), &sum); err != nil {
			t.Fatalf("--json output: %v\n%s", err, out)
		}
		if code != 1 || sum.GradedNow != 0 || sum.ScoredBefore != 2 || sum.Lines != 2 || sum.UnknownTasks["other__repo-7"] != 1 || len(sum.Errors) != 1 {
			t.Errorf("resumed run = %d, %+v", code, sum)
		}
	})

	// A line that cannot be graded (its environment is not in the store)
	// is not written and keeps the shard unfinished, while the other
	// groups are written; a re-run grades it again and writes nothing twice.
	t.Run("ungradable line", func(t *testing.T) {
		in, scored := filepath.Join(dir, "ungradable.jsonl"), filepath.Join(dir, "ungradable-scored.jsonl")
		tasks2 := filepath.Join(dir, "tasks2.jsonl")
		writeJSONL(t, tasks2,
			map[string]any{"instance_id": "calc__calc-1", "repo": "calc/calc", "patch": gold, "test_patch": testPatch,
				"FAIL_TO_PASS": []string{"tests/test_calc.py::test_div_zero"}, "env_id": envID},
			map[string]any{"instance_id": "calc__calc-2", "repo": "calc/calc", "patch": gold, "test_patch": testPatch,
				"FAIL_TO_PASS": []string{"tests/test_calc.py::test_div_zero"}, "env_id": "0000000000000000"})
		writeJSONL(t, in,
			map[string]any{"instance_id": "calc__calc-1", "model_patch": gold, "model_name_or_path": "m1"},
			map[string]any{"instance_id": "calc__calc-2", "model_patch": gold, "model_name_or_path": "m1"})
		for run := 1; run <= 2; run++ {
			code, out, errOut := runCommand(t, &rewardCmd{}, "--tasks", tasks2, "--in", in, "--out", scored)
			if code != 1 || !strings.Contains(errOut, "calc__calc-2") {
				t.Fatalf("run %d: cwm reward = %d, want 1 naming calc__calc-2\n%s%s", run, code, out, errOut)
			}
			var ids []any
			for _, l := range readJSONL(t, scored) {
				ids = append(ids, l["instance_id"])
			}
			if diff := cmp.Diff([]any{"calc__calc-1"}, ids); diff != "" {
				t.Errorf("run %d: scored lines (-want +got):\n%s", run, diff)
			}
			if _, err := os.Stat(batch.MarkerPath(scored)); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("run %d: the shard's marker: %v, want none", run, err)
			}
		}
	})

	t.Run("trajectories", func(t *testing.T) {
		in, scored := filepath.Join(dir, "traj.jsonl"), filepath.Join(dir, "traj-scored.jsonl")
		traj := func(sample int, submitted any, final string) map[string]any {
			return map[string]any{"task_id": "calc__calc-1", "sample": sample, "model": "m", "messages": []any{map[string]any{"role": "user", "content": "fix it"}},
				"steps": []any{}, "patch": final, "submitted_patch": submitted, "reward": nil, "resolved": nil, "similarity": nil, "advantage": nil}
		}
		lines := []any{
			traj(0, gold, wrong),                          // submitted the fix: resolved, +1
			traj(1, nil, gold),                            // submitted nothing: the final diff is graded, +1
			traj(2, wrong, gold),                          // submitted a wrong fix: 0
			traj(3, "diff --git broken\n@@ -1 +1 @@", ""), // submitted junk: -1
		}
		writeJSONL(t, in, lines...)
		code, out, errOut := runCommand(t, &rewardCmd{}, "--tasks", tasks, "--in", in, "--out", scored, "--concurrency", "2")
		if code != 0 {
			t.Fatalf("cwm reward = %d\n%s%s", code, out, errOut)
		}
		scoredLines := readJSONL(t, scored)
		got := map[float64][]any{}
		for _, l := range scoredLines {
			got[l["sample"].(float64)] = []any{l["graded_patch"], l["resolved"], l["reward"], l["advantage"], l["apply"]}
			if _, ok := l["messages"].([]any); !ok {
				t.Errorf("sample %v lost its messages: %v", l["sample"], l)
			}
		}
		// Mean reward 0.25: advantages are reward - 0.25.
		want := map[float64][]any{
			0: {"submitted_patch", true, 1.0, 0.75, "git-apply"},
			1: {"patch", true, 1.0, 0.75, "git-apply"},
			2: {"submitted_patch", false, 0.0, -0.25, "git-apply"},
			3: {"submitted_patch", false, -1.0, -1.25, "failed"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("scored trajectories (-want +got):\n%s", diff)
		}

		// An interrupted run that wrote half the group: the rest is
		// graded and its advantages are over the whole group.
		data, err := os.ReadFile(scored)
		if err != nil {
			t.Fatal(err)
		}
		half := strings.SplitAfter(string(data), "\n")[:2]
		if err := os.WriteFile(scored, []byte(strings.Join(half, "")), 0o644); err != nil {
			t.Fatal(err)
		}
		code, out, errOut = runCommand(t, &rewardCmd{}, "--tasks", tasks, "--in", in, "--out", scored)
		if code != 0 || !strings.Contains(out, "4 lines scored (2 now, 2 before)") {
			t.Fatalf("resumed cwm reward = %d\n%s%s", code, out, errOut)
		}
		total := 0.0
		for _, l := range readJSONL(t, scored) {
			s := l["sample"].(float64)
			if a := l["advantage"].(float64); math.Abs(a-want[s][3].(float64)) > 1e-12 {
				t.Errorf("resumed sample %v: advantage %v, want %v", s, a, want[s][3])
			}
			total += l["advantage"].(float64)
		}
		if math.Abs(total) > 1e-12 {
			t.Errorf("advantages sum to %v, want 0", total)
		}
	})

	t.Run("usage", func(t *testing.T) {
		for _, args := range [][]string{
			{"--tasks", tasks, "--in", "x"},
			{"--tasks", tasks, "--in", "x", "--out", "y", "--reward", "sparse"},
			{"--tasks", tasks, "--in", "x", "--out", "y", "--similarity-threshold", "2"},
			{"--tasks", tasks, "--in", "x", "--out", "y", "--concurrency", "0"},
			{"--tasks", tasks, "--in", "x", "--out", "y", "extra"},
		} {
			if code, _, errOut := runCommand(t, &rewardCmd{}, args...); code != 2 {
				t.Errorf("cwm %v = %d, want 2\n%s", args, code, errOut)
			}
		}
	})
}
