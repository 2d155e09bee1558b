package taskimport

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"

	"cwm/internal/base"
	"cwm/internal/errkind"
	"cwm/internal/lazyre"
	"cwm/internal/reward"
	"cwm/internal/task"
)

// Harbor's task format (1.3), as its loader (harbor.models.task: Task
// and TaskConfig) reads a task directory: instruction.md (leading canary
// comment lines stripped), task.toml, environment/ (a Dockerfile, when
// [environment] names no docker_image), tests/ (copied to /tests for the
// verifier, which runs tests/test.sh and reads /logs/verifier/reward.txt
// or reward.json) and solution/ (copied to /solution, where solve.sh is
// run as the oracle).

// HarborStage is where a Harbor task's tests/ and solution/ wait in its
// base, outside the working directory, until grading copies them to
// /tests and /solution as Harbor's verifier and oracle do (R2E-Gym's
// /r2e_tests are kept out of sight the same way).
const HarborStage = reward.HarborStage

// ReasonBuild is a Harbor task whose Dockerfile does not build.
const ReasonBuild = "environment build fails"

// harborConfig is what cwm reads of task.toml: TaskConfig's fields, with
// their types (a field of another type is the toml decoder's error).
type harborConfig struct {
	SchemaVersion string                 `toml:"schema_version"`
	Version       string                 `toml:"version"`
	Task          *struct{ Name string } `toml:"task"`
	Metadata      map[string]any         `toml:"metadata"`
	Verifier      struct {
		TimeoutSec float64           `toml:"timeout_sec"`
		Env        map[string]string `toml:"env"`
	} `toml:"verifier"`
	Solution struct {
		Env map[string]string `toml:"env"`
	} `toml:"solution"`
	Environment struct {
		DockerImage   string `toml:"docker_image"`
		CPUs          int    `toml:"cpus"`
		MemoryMB      int    `toml:"memory_mb"`
		StorageMB     int    `toml:"storage_mb"`
		AllowInternet *bool  `toml:"allow_internet"`
	} `toml:"environment"`
}

// harborDirs are the task directories path names: a task directory (it
// has task.toml), its task.toml, or a directory of task directories
// (each subdirectory with task.toml or instruction.md, sorted; one
// without task.toml is a bad row; others, such as the images/ an export
// writes beside its tasks, are not tasks).
func harborDirs(path string) ([]string, error) {
	fi, err := os.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errkind.Errorf(errkind.NotFound, "%s: no such file or directory", path)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if !fi.IsDir() {
		if filepath.Base(path) == "task.toml" {
			return []string{filepath.Dir(path)}, nil
		}
		return nil, errkind.Errorf(errkind.Input, "%s: not a Harbor task (want a task directory, its task.toml, or a directory of task directories)", path)
	}
	if _, err := os.Stat(filepath.Join(path, "task.toml")); err == nil {
		return []string{path}, nil
	}
	ents, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	var dirs []string
	for _, e := range ents {
		d := filepath.Join(path, e.Name())
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && (exists(filepath.Join(d, "task.toml")) || exists(filepath.Join(d, "instruction.md"))) {
			dirs = append(dirs, d)
		}
	}
	sort.Strings(dirs)
	if len(dirs) == 0 {
		return nil, errkind.Errorf(errkind.Input, "%s: no task.toml and no task directories in it", path)
	}
	return dirs, nil
}

// readHarbor reads the task directory dir: its task (the instruction,
// the id and what metadata gives) and its config. What is wrong with it
// is a *rowError naming the file.
func readHarbor(dir string) (task.Task, *harborConfig, error) {
	var t task.Task
	var cfg harborConfig
	t.InstanceID = filepath.Base(dir)
	raw, err := os.ReadFile(filepath.Join(dir, "task.toml"))
	if err != nil {
		return t, nil, bad("no task.toml")
	}
	if _, err := toml.Decode(string(raw), &cfg); err != nil {
		return t, nil, bad("task.toml: %v", err)
	}
	if cfg.Task != nil && cfg.Task.Name != "" {
		t.InstanceID = cfg.Task.Name
	}
	meta := func(k string) string { s, _ := cfg.Metadata[k].(string); return s }
	if id := meta("instance_id"); id != "" {
		t.InstanceID = id
	}
	t.Repo, t.BaseCommit, t.CreatedAt = meta("repo"), meta("base_commit"), meta("created_at")
	for _, f := range []string{"instruction.md", "tests/test.sh", "solution/solve.sh"} {
		if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || !fi.Mode().IsRegular() {
			return t, nil, bad("no %s", f)
		}
	}
	if cfg.Environment.DockerImage == "" {
		if _, err := os.Stat(filepath.Join(dir, "environment", "Dockerfile")); err != nil {
			return t, nil, bad("task.toml's [environment] names no docker_image and there is no environment/Dockerfile")
		}
	}
	ins, err := os.ReadFile(filepath.Join(dir, "instruction.md"))
	if err != nil {
		return t, nil, bad("instruction.md: %v", err)
	}
	t.ProblemStatement = strings.TrimSuffix(stripCanary(string(ins)), "\n")
	switch {
	case strings.TrimSpace(t.ProblemStatement) == "":
		return t, nil, bad("instruction.md is empty")
	case len(t.ProblemStatement) > MaxProblem:
		return t, nil, bad("instruction.md is %d bytes, more than %d", len(t.ProblemStatement), MaxProblem)
	}
	t.Kind = "imported"
	t.Imported = &task.Imported{Format: "harbor", Image: cfg.Environment.DockerImage,
		TestCommand: "bash /tests/test.sh", HiddenTests: HarborStage}
	return t, &cfg, nil
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

var canaryLine = lazyre.New(`(?i)^(<!--.*canary.*-->|#.*canary.*)$`)

// stripCanary drops the leading canary comment lines and the blank lines
// after them, as Harbor's strip_canary does before an agent sees the
// instruction.
func stripCanary(s string) string {
	lines := strings.Split(s, "\n")
	i := 0
	for i < len(lines) && canaryLine().MatchString(strings.TrimSpace(lines[i])) {
		i++
	}
	if i == 0 {
		return s
	}
	for i < len(lines) && strings.TrimSpace(lines[i]) == "" {
		i++
	}
	return strings.Join(lines[i:], "\n")
}

// importHarbor is Import of Harbor task directories: each task's
// environment made a base (its docker_image imported, or its Dockerfile
// carried out), with its tests/ and solution/ staged at HarborStage, and
// the task validated by its own scripts.
func importHarbor(ctx context.Context, path string, o Options, t0 time.Time) ([]task.Task, *Report, error) {
	dirs, err := harborDirs(path)
	if err != nil {
		return nil, nil, err
	}
	rep := newReport(o, path, len(dirs))
	seen := map[string]int{}
	var kept []task.Task
	for i, dir := range dirs {
		n := i + 1
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		t, cfg, err := readHarbor(dir)
		var re *rowError
		if errors.As(err, &re) {
			rep.leave(o, n, t.InstanceID, ReasonBadRow, filepath.Base(dir)+": "+re.msg)
			continue
		}
		if prev, ok := seen[t.InstanceID]; ok {
			rep.leave(o, n, t.InstanceID, ReasonDuplicate, fmt.Sprintf("instance_id %q already in task %d", t.InstanceID, prev))
			continue
		}
		seen[t.InstanceID] = n
		b, err := harborBase(ctx, o, dir, cfg)
		var bf *buildFailed
		switch {
		case errors.As(err, &re):
			rep.leave(o, n, t.InstanceID, ReasonBadRow, re.msg)
			continue
		case errors.As(err, &bf):
			rep.leave(o, n, t.InstanceID, bf.class, bf.msg)
			continue
		case err != nil:
			return nil, nil, err
		}
		rep.Images[harborImage(dir, cfg)] = b.Digest
		t.Imported.Base, t.Imported.Workdir = b.Digest, b.WorkingDir
		if t.Imported.Workdir == "" {
			t.Imported.Workdir = "/"
		}
		if err := o.Sandboxes.record(ctx, &t); err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", t.InstanceID, err)
		}
		class, why, err := o.Sandboxes.validateHarbor(ctx, &t, cfg, o.Runs)
		if err != nil {
			return nil, nil, fmt.Errorf("validate %s: %w", t.InstanceID, err)
		}
		kept = rep.decided(o, n, t, class, why, kept)
	}
	return rep.done(kept, t0)
}

// harborImage is what the report says a task's environment came from.
func harborImage(dir string, cfg *harborConfig) string {
	if cfg.Environment.DockerImage != "" {
		return cfg.Environment.DockerImage
	}
	return filepath.Join(dir, "environment", "Dockerfile")
}

// harborBase is the base of a task: its docker_image, or its
// Dockerfile's build, with tests/ and solution/ copied to HarborStage.
func harborBase(ctx context.Context, o Options, dir string, cfg *harborConfig) (*base.Base, error) {
	name := filepath.Base(dir)
	p := &dockerPlan{file: name + "/task.toml", path: filepath.Join(dir, "task.toml"), from: dockerStep{op: "from", args: []string{cfg.Environment.DockerImage}}}
	if cfg.Environment.DockerImage == "" {
		var err error
		if p, err = readDockerfile(filepath.Join(dir, "environment", "Dockerfile"), name+"/environment/Dockerfile"); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"tests", "solution"} {
		p.steps = append(p.steps, dockerStep{op: "copy", args: []string{d, HarborStage + "/" + d}, context: dir,
			at: name + "/" + d + "/ to " + HarborStage + "/" + d})
	}
	return buildDockerfile(ctx, o, p, filepath.Join(dir, "environment"))
}

// gradeHarbor runs t's tests after the gold solution (gold) or with
// candidate applied, in a fresh sandbox on its environment, and reads
// the reward (reward.HarborIn).
func (s Sandboxes) gradeHarbor(ctx context.Context, t *task.Task, env []string, gold bool, candidate string) (*reward.HarborRun, error) {
	sb, err := s.open(ctx, t)
	if err != nil {
		return nil, err
	}
	defer sb.Close()
	return reward.HarborIn(ctx, sb, t, env, gold, candidate)
}

// validateHarbor grades t runs times after its solution (reward 1 each
// time) and runs times without a change (reward 0 each time), and sets
// its gold patch (what the solution changed) and its Validation.
func (s Sandboxes) validateHarbor(ctx context.Context, t *task.Task, cfg *harborConfig, runs int) (class, reason string, err error) {
	t0 := time.Now()
	var env []string
	for _, m := range []map[string]string{cfg.Solution.Env, cfg.Verifier.Env} {
		for _, k := range sortedKeys(m) {
			env = append(env, k+"="+m[k])
		}
	}
	t.Imported.Env = nil
	for _, k := range sortedKeys(cfg.Verifier.Env) {
		t.Imported.Env = append(t.Imported.Env, k+"="+cfg.Verifier.Env[k])
	}
	var tests int
	count := func(gold bool) (ones int, last string, class, reason string, err error) {
		for i := 0; i < runs; i++ {
			r, err := s.gradeHarbor(ctx, t, env, gold, "")
			if err != nil {
				return 0, "", "", "", err
			}
			what := map[bool]string{true: "gold", false: "empty patch"}[gold]
			switch {
			case r.Problem != "" && gold:
				return 0, "", ReasonGoldFails, fmt.Sprintf("%s, run %d: %s", what, i+1, r.Problem), nil
			case r.Problem != "":
				return 0, "", ReasonPatch, fmt.Sprintf("%s, run %d: %s", what, i+1, r.Problem), nil
			case !r.OK:
				return 0, "", ReasonNoTests, fmt.Sprintf("%s, run %d: tests/test.sh wrote no /logs/verifier/reward.txt or reward.json (%s)", what, i+1, tail(r.Log)), nil
			}
			tests++
			if gold && t.Patch == "" {
				t.Patch = r.Gold
			}
			if r.Reward >= 1 {
				ones++
			} else {
				last = strconv.FormatFloat(r.Reward, 'g', -1, 64)
			}
		}
		return ones, last, "", "", nil
	}
	ones, last, class, reason, err := count(true)
	if err != nil || class != "" {
		return class, reason, err
	}
	switch {
	case ones == 0:
		return ReasonGoldFails, fmt.Sprintf("reward %s after solution/solve.sh", last), nil
	case ones < runs:
		return ReasonFlaky, fmt.Sprintf("reward 1 after solution/solve.sh in %d of %d runs (else %s)", ones, runs, last), nil
	}
	ones, _, class, reason, err = count(false)
	if err != nil || class != "" {
		return class, reason, err
	}
	switch {
	case ones == runs:
		return ReasonNoopPasses, "reward 1 without the solution", nil
	case ones > 0:
		return ReasonFlaky, fmt.Sprintf("reward 1 without the solution in %d of %d runs", ones, runs), nil
	}
	t.Validation = &task.Validation{TestsRun: tests, Seconds: time.Since(t0).Seconds(), Checks: []string{
		fmt.Sprintf("reward 1 after solution/solve.sh (%d runs)", runs),
		fmt.Sprintf("reward 0 without it (%d runs)", runs)}}
	return "", "", nil
}
