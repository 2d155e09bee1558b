// Package taskexport writes cwm's tasks in the formats the field's
// harnesses run and grade: SWE-bench's instances (targeting swebench
// 5.0.2's harness: its pytest log parser, its eval scripts, a real commit
// holding each bug in a bare mirror written beside them) and Harbor's
// task directories (task format 1.3). A task the format cannot express
// is dropped with the reason, and a test whose id SWE-bench's parser
// cannot reproduce is left out and counted, never silently changed.
package taskexport

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/jsonl"
	"cwm/internal/task"
)

// Instance is one SWE-bench row as swebench 5.0.2's harness reads it
// (make_test_spec): the dataset's fields plus image, eval_script,
// log_parser and eval_type.
type Instance struct {
	InstanceID             string   `json:"instance_id"`
	Repo                   string   `json:"repo"`
	BaseCommit             string   `json:"base_commit"`
	Patch                  string   `json:"patch"`
	TestPatch              string   `json:"test_patch"`
	ProblemStatement       string   `json:"problem_statement"`
	HintsText              string   `json:"hints_text"`
	CreatedAt              string   `json:"created_at"`
	Version                string   `json:"version"`
	FailToPass             []string `json:"FAIL_TO_PASS"`
	PassToPass             []string `json:"PASS_TO_PASS"`
	EnvironmentSetupCommit string   `json:"environment_setup_commit"`
	Image                  string   `json:"image"`
	EvalScript             string   `json:"eval_script"`
	LogParser              string   `json:"log_parser"`
	EvalType               string   `json:"eval_type"`
	// Mirror is the bare repository beside the export holding
	// base_commit, on a branch named instance_id (relative to the
	// export's directory).
	Mirror string `json:"mirror"`
}

// Dropped is a task the export could not write, and why.
type Dropped struct {
	InstanceID string `json:"instance_id"`
	Reason     string `json:"reason"`
}

// Summary is what an export wrote.
type Summary struct {
	Format   string `json:"format"`
	Tasks    int    `json:"tasks"`
	Exported int    `json:"exported"`
	// LeftOutTests counts FAIL_TO_PASS and PASS_TO_PASS ids left out
	// because SWE-bench's parser cannot report them under their names.
	LeftOutTests int       `json:"left_out_tests"`
	Dropped      []Dropped `json:"dropped"`
	// NoImage says, per environment whose tasks have no image written,
	// why (an environment on the host's root; --no-images).
	NoImage map[string]string `json:"no_image,omitempty"`
	Out     string            `json:"out"`
}

// Options configure an export.
type Options struct {
	Store *env.Store
	// NoImages skips writing the images (each environment's base and
	// layer flattened, a layer per task); image still names them.
	NoImages bool
}

// InstancesFile is the SWE-bench rows' file in an export's directory.
const InstancesFile = "instances.jsonl"

// Instances makes the SWE-bench instance of every task that has one,
// writing the bare mirrors holding their base commits under out/repos.
func Instances(ctx context.Context, sbs *env.Sandboxes, tasks []task.Task, out string, o Options) ([]Instance, *Summary, error) {
	sum := &Summary{Format: "swebench", Tasks: len(tasks), Out: out, Dropped: []Dropped{}}
	byEnv := map[string][]*task.Task{}
	var envIDs []string
	for i := range tasks {
		t := &tasks[i]
		if _, ok := byEnv[t.EnvID]; !ok {
			envIDs = append(envIDs, t.EnvID)
		}
		byEnv[t.EnvID] = append(byEnv[t.EnvID], t)
	}
	made := map[string]Instance{}
	for _, id := range envIDs {
		ts := byEnv[id]
		e := o.Store.Get(id)
		if e == nil {
			for _, t := range ts {
				sum.Dropped = append(sum.Dropped, Dropped{t.InstanceID, fmt.Sprintf("environment %s is not in the store", id)})
			}
			continue
		}
		var keep []*task.Task
		for _, t := range ts {
			inst, why, left := instance(e, t)
			sum.LeftOutTests += left
			if why != "" {
				sum.Dropped = append(sum.Dropped, Dropped{t.InstanceID, why})
				continue
			}
			made[t.InstanceID] = inst
			keep = append(keep, t)
		}
		if len(keep) == 0 {
			continue
		}
		rel := filepath.Join("repos", e.ID+".git")
		dir := filepath.Join(out, rel)
		if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
			return nil, nil, err
		}
		if err := os.RemoveAll(dir); err != nil {
			return nil, nil, err
		}
		commits, err := writeMirror(ctx, sbs, e, keep, dir)
		if err != nil {
			return nil, nil, err
		}
		images := map[string]string{}
		why := "not written (--no-images)"
		if !o.NoImages {
			if images, why, err = writeImages(ctx, sbs, e, keep, commits, out); err != nil {
				return nil, nil, err
			}
		}
		if why != "" {
			if sum.NoImage == nil {
				sum.NoImage = map[string]string{}
			}
			sum.NoImage[e.ID] = why
		}
		for _, t := range keep {
			inst := made[t.InstanceID]
			inst.Image = images[t.InstanceID]
			if inst.Image == "" {
				inst.Image = ImageName(e, TaskTag(t.InstanceID))
				if t.BugPatch == "" {
					inst.Image = ImageName(e, "latest")
				}
			}
			inst.BaseCommit = commits[t.InstanceID]
			inst.Mirror = rel
			script, err := EvalScript(e, inst.BaseCommit, t.TestPatch)
			if err != nil {
				return nil, nil, err
			}
			inst.EvalScript = script
			made[t.InstanceID] = inst
		}
	}
	var insts []Instance
	for _, t := range tasks {
		if inst, ok := made[t.InstanceID]; ok {
			insts = append(insts, inst)
		}
	}
	sum.Exported = len(insts)
	return insts, sum, nil
}

// SWEBench writes the SWE-bench instances of tasks to out/instances.jsonl
// and the mirrors holding their base commits to out/repos.
func SWEBench(ctx context.Context, sbs *env.Sandboxes, tasks []task.Task, out string, o Options) (*Summary, error) {
	insts, sum, err := Instances(ctx, sbs, tasks, out, o)
	if err != nil {
		return nil, err
	}
	if err := jsonl.ReplaceWith(filepath.Join(out, InstancesFile), insts); err != nil {
		return nil, fmt.Errorf("write the instances: %w", err)
	}
	return sum, nil
}

// instance maps t (on e) to its SWE-bench row, without base_commit, image
// and eval_script, or says why it has none; left counts the test ids left
// out.
func instance(e *env.Env, t *task.Task) (inst Instance, why string, left int) {
	if e.TestCommand.Framework != "pytest" {
		return inst, fmt.Sprintf("the environment's test command %q is not pytest's: SWE-bench's pytest log parser cannot read it", e.TestCommand.Line), 0
	}
	if t.Patch == "" {
		return inst, "no gold patch", 0
	}
	all := testIDs(e)
	f2p, leftF := keepable(t.FailToPass, all)
	p2p, leftP := keepable(t.PassToPass, all)
	left = len(leftF) + len(leftP)
	if len(f2p) == 0 {
		return inst, fmt.Sprintf("no FAIL_TO_PASS test SWE-bench's parser can report (%d left out: %s)", len(leftF), strings.Join(leftF, ", ")), left
	}
	hints := t.HintsText
	return Instance{
		InstanceID:             t.InstanceID,
		Repo:                   t.Repo,
		Patch:                  t.Patch,
		TestPatch:              t.TestPatch,
		ProblemStatement:       t.ProblemStatement,
		HintsText:              hints,
		CreatedAt:              t.CreatedAt,
		Version:                t.EnvID,
		FailToPass:             sorted(f2p),
		PassToPass:             sorted(p2p),
		EnvironmentSetupCommit: e.Commit,
		LogParser:              LogParser,
		EvalType:               "pass_and_fail",
	}, "", left
}

// testIDs are the ids of every test of e's baseline.
func testIDs(e *env.Env) []string {
	ids := make([]string, 0, len(e.Baseline))
	for _, r := range e.Baseline {
		ids = append(ids, r.ID)
	}
	return ids
}

// ReadInstances reads an export's instances.jsonl.
func ReadInstances(path string) ([]Instance, error) {
	var out []Instance
	err := jsonl.ScanInput(path, func(n int, line []byte) error {
		var inst Instance
		if err := jsonl.Unmarshal(line, &inst); err != nil {
			return err
		}
		if inst.InstanceID == "" {
			return errkind.New(errkind.Input, "instance without instance_id")
		}
		out = append(out, inst)
		return nil
	})
	return out, err
}
