package taskimport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/agent"
	"cwm/internal/env"
	"cwm/internal/episode"
	"cwm/internal/grade"
	"cwm/internal/jsonl"
	"cwm/internal/model"
	"cwm/internal/model/modeltest"
	"cwm/internal/reward"
	"cwm/internal/selection"
	"cwm/internal/selection/selectiontest"
	"cwm/internal/task"
	"cwm/internal/tracer"
	"cwm/internal/trajectory"
)

// checkStages runs the other stages on k, the SWE-bench task TestImport
// kept (its image's environment in home's store), as they run native
// tasks: reward and grade with the dataset's harness, a forage episode
// and a served episode in the image's working directory with its PATH,
// select over its candidates, trace repo on its environment. r is the
// repository the image holds.
func checkStages(t *testing.T, ctx context.Context, home string, k task.Task, r repo) {
	store := env.NewStore(home)
	sbs := env.NewSandboxes(rt)
	e := store.Get(k.EnvID)
	if e == nil {
		t.Fatalf("the task's env_id %q names no environment in %s", k.EnvID, store.Dir())
	}
	if e.Image == nil || e.RepoDir() != testbed || !strings.HasPrefix(e.Python, "3.11.") || e.Base != k.Imported.Base {
		t.Errorf("the image's environment: image %+v, repository %s, Python %q, base %s; want /testbed, 3.11, %s", e.Image, e.RepoDir(), e.Python, e.Base, k.Imported.Base)
	}
	if o := e.Origin(); o == nil || o.Kind != env.OriginDataset || o.Base != k.Imported.Base || !strings.Contains(o.String(), k.Imported.Image) {
		t.Errorf("the environment's origin = %+v; want the dataset's image, granted its base", o)
	}
	if diff := cmp.Diff(k.PassToPass, e.Passing()); diff != "" {
		t.Errorf("the environment's passing tests are the task's PASS_TO_PASS (-want +got):\n%s", diff)
	}
	// A candidate that also edits a test the dataset grades with: the
	// test file is restored before grading, so it is graded on the
	// dataset's tests.
	editsTests := k.Patch + change(t, r.dir, "tests/test_calc.py", strings.Replace(calcRepo["tests/test_calc.py"], "== 6", "== 7", 1))
	wrong := strings.Replace(k.Patch, "+    return a + b", "+    return a - abs(b)", 1)

	t.Run("reward", func(t *testing.T) {
		for _, c := range []struct {
			name, patch string
			resolved    bool
			apply       reward.ApplyMethod
		}{
			{"gold", k.Patch, true, reward.ApplyGit},
			{"gold and a test edited", editsTests, true, reward.ApplyGit},
			{"wrong", wrong, false, reward.ApplyGit},
			{"not applying", strings.Replace(k.Patch, "return a + abs(b)", "return a + abs(c)", 1), false, reward.ApplyFailed},
			{"empty", "", false, reward.ApplyEmpty},
		} {
			res, err := reward.Grade(ctx, sbs, e, &k, c.patch)
			if err != nil || res.Resolved != c.resolved || res.Apply != c.apply {
				t.Errorf("Grade(%s) = resolved %v, %s, %v (%s); want %v, %s", c.name, res.Resolved, res.Apply, err, res.Reason, c.resolved, c.apply)
			}
		}
	})

	t.Run("grade", func(t *testing.T) {
		gold, empty := k.Patch, ""
		preds := []grade.Prediction{{InstanceID: k.InstanceID, ModelNameOrPath: "m", ModelPatch: &gold}}
		rep, err := grade.Grade(ctx, sbs, []task.Task{k}, preds, grade.Options{Store: store})
		if err != nil || len(rep.ResolvedIDs) != 1 {
			t.Errorf("grade.Grade(gold) = %+v, %v; want %s resolved", rep, err, k.InstanceID)
		}
		preds[0].ModelPatch = &empty
		if rep, err := grade.Grade(ctx, sbs, []task.Task{k}, preds, grade.Options{Store: store}); err != nil || len(rep.ResolvedIDs) != 0 || len(rep.EmptyPatchIDs) != 1 {
			t.Errorf("grade.Grade(empty) = %+v, %v; want an empty patch, unresolved", rep, err)
		}
	})

	// The scripted agent looks where it is and what PATH finds, then
	// applies fix (the gold patch, or a wrong one) and submits it.
	agentReplies := func(fix string) []modeltest.Reply {
		return []modeltest.Reply{
			modeltest.Tool("bash", "pwd; command -v pytest; ls /r2e_tests 2>&1 | head -1"),
			modeltest.Tool("bash", "cat > /tmp/fix.diff <<'EOF'\n"+fix+"EOF\ngit apply /tmp/fix.diff && git diff > /tmp/fix.patch && python -m pytest -q tests 2>&1 | tail -1"),
			modeltest.Tool("submit", "/tmp/fix.patch"),
			modeltest.Text("## Summary\nadd uses b as it is."),
		}
	}
	t.Run("forage", func(t *testing.T) {
		for _, c := range []struct {
			name, fix string
			want      float64
		}{{"gold", k.Patch, 1}, {"wrong", wrong, 0}} {
			srv, err := modeltest.Start(modeltest.ByIssue(map[string][]modeltest.Reply{"add(2, -3)": agentReplies(c.fix)}, modeltest.Text("done")), false)
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake-model", APIKey: "k", MaxRetries: 1, Backoff: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			p, _ := agent.NewProtocol("cwm", "")
			out := filepath.Join(t.TempDir(), "trajectories.jsonl")
			m := reward.Mapping{Kind: "binary"}
			var failures []string
			f, err := agent.NewForage(&agent.Runner{Sandboxes: sbs, Client: client, Protocol: p, Limits: agent.Limits{MaxTurns: 8}},
				agent.ForageOptions{Tasks: []task.Task{k}, Out: out, Store: store, Grade: &m,
					OnFailure: func(_ *task.Task, _ int, _ *trajectory.Trajectory, err error) {
						failures = append(failures, fmt.Sprint(err))
					}})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := f.Run(ctx); err != nil {
				t.Fatal(err)
			}
			var trs []trajectory.Trajectory
			if err := jsonl.Decode(out, func(_ int, tr trajectory.Trajectory) error { trs = append(trs, tr); return nil }); err != nil || len(trs) != 1 {
				t.Fatalf("%s: %d trajectories (%v), want 1; episodes that failed: %q", c.name, len(trs), err, failures)
			}
			tr := trs[0]
			if tr.Reward == nil || *tr.Reward != c.want || tr.SubmittedPatch == nil {
				t.Errorf("%s agent: reward %v, submitted %v; want %v", c.name, tr.Reward, tr.SubmittedPatch != nil, c.want)
			}
			if len(tr.Steps) == 0 || tr.Steps[0].Observation != testbed+"\n"+condaBin+"/pytest\nls: cannot access '/r2e_tests': No such file or directory" {
				t.Errorf("%s agent: the first command saw %q; want it in %s with %s first on PATH", c.name, firstObservation(tr), testbed, condaBin)
			}
		}
	})

	t.Run("serve", func(t *testing.T) {
		checkServed(t, ctx, home, k, "pwd; command -v pytest", testbed+"\n"+condaBin+"/pytest\n")
	})

	t.Run("select", func(t *testing.T) {
		test := "from calc import add\n\nprint(\"Issue resolved\" if add(2, -3) == -1 else \"Issue reproduced\")\n"
		srv := selectiontest.Server(t, []string{"```python\n" + test + "```\n"})
		client, err := model.NewClient(model.ClientConfig{BaseURL: srv.URL, Model: "fake-model", APIKey: "k", MaxRetries: 1, Backoff: time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		cands := filepath.Join(dir, "preds.jsonl")
		var lines []string
		for _, p := range []string{wrong, k.Patch, wrong} {
			b, _ := json.Marshal(map[string]any{"instance_id": k.InstanceID, "model_name_or_path": "m", "model_patch": p})
			lines = append(lines, string(b))
		}
		if err := os.WriteFile(cands, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "selected.jsonl")
		_, failed, err := selection.Run(ctx, sbs, selection.Options{Config: selection.Config{Client: client, Tests: 1, Keep: 1,
			Method: selection.MethodBest, Curves: true}, Tasks: []task.Task{k}, Candidates: cands, Out: out, Name: "best", Store: store})
		if err != nil || len(failed) != 0 {
			t.Fatalf("selection.Run = %v, %+v", err, failed)
		}
		var got []selection.Line
		jsonl.Decode(out, func(_ int, l selection.Line) error { got = append(got, l); return nil })
		if len(got) != 1 || got[0].ModelPatch != k.Patch {
			t.Errorf("select picked %+v; want the gold patch", got)
		}
	})

	t.Run("trace repo", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "episodes.jsonl")
		sum, err := tracer.TraceRepo(ctx, sbs, tracer.RepoRunOptions{Env: e, Out: out, Repo: tracer.RepoOptions{Workers: 1}})
		if err != nil || sum.Traced != len(k.PassToPass) || sum.Written == 0 {
			t.Errorf("TraceRepo(%s) = %+v, %v; want its %d passing tests traced", e.ID, sum, err, len(k.PassToPass))
		}
		old := *e
		old.Python = "3.6.15"
		_, err = tracer.TraceRepo(ctx, sbs, tracer.RepoRunOptions{Env: &old, Out: out})
		if err == nil || !strings.Contains(err.Error(), "this environment has 3.6") || !strings.Contains(err.Error(), tracer.Pythons) {
			t.Errorf("TraceRepo on an image with Python 3.6 = %v; want a refusal naming 3.6 and %s", err, tracer.Pythons)
		}
	})
}

func firstObservation(tr trajectory.Trajectory) string {
	if len(tr.Steps) == 0 {
		return ""
	}
	return tr.Steps[0].Observation
}

// checkEpisode starts an episode on k, the R2E-Gym task TestImport kept:
// the agent is in the image's working directory with its venv first on
// PATH, and the hidden tests (/r2e_tests) are not in its sandbox.
func checkEpisode(t *testing.T, ctx context.Context, home string, k task.Task) {
	e := env.NewStore(home).Get(k.EnvID)
	if e == nil {
		t.Fatalf("the task's env_id %q names no environment", k.EnvID)
	}
	sb, err := env.NewSandboxes(rt).Open(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := episode.Start(ctx, sb, &k, episode.Options{RepoRoot: e.RepoDir()})
	if err != nil {
		sb.Close()
		t.Fatal(err)
	}
	defer ep.Close()
	o, err := ep.Bash(ctx, "pwd; command -v python; ls /r2e_tests r2e_tests 2>&1 | wc -l")
	if want := testbed + "\n" + testbed + "/.venv/bin/python\n2"; err != nil || o.Text != want {
		t.Errorf("the episode's first command printed %q (%v); want %q: in %s, the venv first, no hidden tests", o.Text, err, want, testbed)
	}
}
