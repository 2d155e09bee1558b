package taskexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"cwm/internal/env"
	"cwm/internal/task"
)

// Harbor's task format (1.3): a directory per task with instruction.md,
// task.toml, environment/Dockerfile, tests/test.sh (which writes the
// reward to /logs/verifier/reward.txt) and solution/solve.sh.

// HarborSchema is the task.toml schema version written.
const HarborSchema = "1.3"

// RewardFile is where tests/test.sh writes the reward, as Harbor's
// verifier reads it.
const RewardFile = "/logs/verifier/reward.txt"

// Harbor writes a Harbor task directory per task under out, named for
// its instance id, from the same SWE-bench instances SWEBench writes (so
// the same tasks are dropped, for the same reasons).
func Harbor(ctx context.Context, sbs *env.Sandboxes, tasks []task.Task, out string, o Options) (*Summary, error) {
	insts, sum, err := Instances(ctx, sbs, tasks, out, o)
	if err != nil {
		return nil, err
	}
	sum.Format = "harbor"
	byID := map[string]*task.Task{}
	for i := range tasks {
		byID[tasks[i].InstanceID] = &tasks[i]
	}
	for _, inst := range insts {
		e := o.Store.Get(byID[inst.InstanceID].EnvID)
		if err := writeHarbor(filepath.Join(out, HarborDir(inst.InstanceID)), inst, byID[inst.InstanceID], e); err != nil {
			return nil, fmt.Errorf("write the Harbor task of %s: %w", inst.InstanceID, err)
		}
	}
	return sum, nil
}

var unsafeName = regexp.MustCompile(`[^A-Za-z0-9._-]`)

// HarborDir is the directory name of an instance's task: its id with
// anything but letters, digits, '.', '_' and '-' made '_'.
func HarborDir(id string) string { return unsafeName.ReplaceAllString(id, "_") }

func writeHarbor(dir string, inst Instance, t *task.Task, e *env.Env) error {
	test, err := TestScript(inst)
	if err != nil {
		return err
	}
	files := map[string]string{
		"instruction.md":         inst.ProblemStatement + "\n",
		"task.toml":              taskTOML(inst, e),
		"environment/Dockerfile": dockerfile(inst, t, e),
		"tests/test.sh":          test,
		"solution/solve.sh":      solveScript(inst.Patch),
	}
	if t.BugPatch != "" {
		files["environment/bug.patch"] = t.BugPatch
	}
	if err := os.RemoveAll(dir); err != nil {
		return err
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if strings.HasSuffix(name, ".sh") {
			mode = 0o755
		}
		if err := os.WriteFile(p, []byte(text), mode); err != nil {
			return err
		}
	}
	return nil
}

// taskTOML is task.toml: the verifier's and the agent's time limits, the
// image and the environment's resources, no internet.
func taskTOML(inst Instance, e *env.Env) string {
	cpus := 1
	memMB, diskMB := int64(2048), int64(10240)
	if e.Limits.Memory > 0 {
		memMB = max(e.Limits.Memory>>20, 512)
	}
	if e.Limits.Disk > 0 {
		diskMB = max(e.Limits.Disk>>20, 1024)
	}
	verifier := 600.0
	if e.Limits.Timeout > 0 {
		verifier = max(verifier, 2*e.Limits.Timeout.Seconds())
	}
	return fmt.Sprintf(`schema_version = %q

[metadata]
instance_id = %s
repo = %s
env_id = %s
base_commit = %q
source = "cwm"

[verifier]
timeout_sec = %.1f

[agent]
timeout_sec = 3600.0

[environment]
docker_image = %s
cpus = %d
memory_mb = %d
storage_mb = %d
allow_internet = false
`, HarborSchema, tomlString(inst.InstanceID), tomlString(inst.Repo), tomlString(e.ID), inst.BaseCommit,
		verifier, tomlString(inst.Image), cpus, memMB, diskMB)
}

// tomlString is s as a TOML basic string (JSON's escapes are TOML's for
// the characters it escapes).
func tomlString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// dockerfile builds the task's image from its environment's: the working
// tree at base_commit (the bug applied and committed, as the mirror's
// branch holds it), what the export's task image holds.
func dockerfile(inst Instance, t *task.Task, e *env.Env) string {
	var b strings.Builder
	fmt.Fprintf(&b, "FROM %s\nWORKDIR %s\n", ImageName(e, "latest"), env.RepoRoot)
	if t.BugPatch != "" {
		b.WriteString("COPY bug.patch /tmp/bug.patch\n")
		fmt.Fprintf(&b, "RUN git checkout -q --detach && git apply --index /tmp/bug.patch && rm /tmp/bug.patch && \\\n"+
			"    GIT_AUTHOR_NAME=cwm GIT_AUTHOR_EMAIL=cwm@localhost GIT_COMMITTER_NAME=cwm GIT_COMMITTER_EMAIL=cwm@localhost \\\n"+
			"    GIT_AUTHOR_DATE=%s GIT_COMMITTER_DATE=%s git commit -q --no-verify -m %s\n",
			commitDate(inst.CreatedAt), commitDate(inst.CreatedAt), quoteAll([]string{inst.InstanceID + ": the bug of the task"})[0])
	}
	return b.String()
}

func solveScript(patch string) string {
	d := delimiter(patch)
	return fmt.Sprintf("#!/bin/bash\nset -euo pipefail\ncd %s\ngit apply -v - <<'%s'\n%s%s\n", env.RepoRoot, d, withNewline(patch), d)
}

func withNewline(s string) string {
	if strings.HasSuffix(s, "\n") {
		return s
	}
	return s + "\n"
}

// TestScript is tests/test.sh: the instance's eval script with its output
// in /logs/verifier/test-output.txt, then the reward: 1 when every
// FAIL_TO_PASS test passed and no PASS_TO_PASS test failed, read from the
// output as SWE-bench's parse_log_pytest and get_eval_report read it
// (PASSED or XFAIL is a pass; a skipped PASS_TO_PASS test is no
// regression), else 0.
func TestScript(inst Instance) (string, error) {
	body := strings.TrimPrefix(inst.EvalScript, "#!/bin/bash\nset -uxo pipefail\n")
	want, err := json.Marshal(map[string][]string{"FAIL_TO_PASS": inst.FailToPass, "PASS_TO_PASS": inst.PassToPass})
	if err != nil {
		return "", err
	}
	d := delimiter(body)
	return fmt.Sprintf(`#!/bin/bash
set -uo pipefail
mkdir -p /logs/verifier
echo 0 > %[1]s
cat > /tmp/cwm-eval.sh <<'%[2]s'
%[3]s%[2]s
bash -ux /tmp/cwm-eval.sh > /logs/verifier/test-output.txt 2>&1 < /dev/null
python3 - /logs/verifier/test-output.txt > %[1]s <<'EOF_CWM_GRADE'
import sys
want = %[4]s
status = {}
for line in open(sys.argv[1], errors="replace").read().split("\n"):
    if not line.startswith(("FAILED", "PASSED", "SKIPPED", "ERROR", "XFAIL")):
        continue
    if line.startswith("FAILED"):
        line = line.replace(" - ", " ")
    w = line.split()
    if len(w) > 1:
        status[w[1]] = w[0]
ok = all(status.get(t) in ("PASSED", "XFAIL") for t in want["FAIL_TO_PASS"])
ok = ok and all(status.get(t) in ("PASSED", "XFAIL", "SKIPPED") for t in want["PASS_TO_PASS"])
print(1 if ok else 0)
EOF_CWM_GRADE
`, RewardFile, d, withNewline(body), string(want)), nil
}
