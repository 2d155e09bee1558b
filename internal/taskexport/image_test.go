package taskexport

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/base/basetest"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/envbuild"
	"cwm/internal/task"
	"cwm/internal/tasks"
)

// imageTools makes sure umoci and runc (Debian's) are on PATH, installing
// them with apt-get when missing; skips when they cannot be installed.
func imageTools(t *testing.T) {
	t.Helper()
	var missing []string
	for _, tool := range []string{"umoci", "runc"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	cmd := exec.Command("apt-get", append([]string{"install", "-y", "--no-install-recommends"}, missing...)...)
	cmd.Env = append(os.Environ(), "DEBIAN_FRONTEND=noninteractive")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("%s missing and apt-get cannot install them: %v\n%s", strings.Join(missing, ", "), err, b)
	}
}

// bookwormTextkit builds the example repository on the Debian bookworm
// test base.
func bookwormTextkit(t *testing.T) *env.Env {
	t.Helper()
	b := basetest.Link(t, basetest.Debian(t, "bookworm"), testHome)
	policy, err := egress.DefaultPolicy(context.Background())
	if err != nil {
		t.Fatalf("the host's package index: %v", err)
	}
	e, err := envbuild.Build(context.Background(), testSandboxes, envbuild.Options{Source: "../../examples/textkit",
		Home: testHome, Runs: 1, Base: b.Digest, Mode: env.ModeOnline, Egress: &policy, Name: "textkit-bookworm",
		Limits: env.RunLimits{Timeout: 5 * time.Minute}})
	if err != nil {
		t.Fatalf("build textkit on bookworm: %v", err)
	}
	if !e.Usable {
		t.Fatalf("textkit on bookworm is not usable: %s", e.Reason)
	}
	return env.NewStore(testHome).Get(e.ID)
}

// runImage unpacks the image ref of the layout dir with umoci and runs
// shell in it with runc, returning its output. The bundle's rlimits are
// dropped (runc here refuses them) and the process gets no terminal.
func runImage(t *testing.T, dir, ref, shell string) string {
	t.Helper()
	bundle := filepath.Join(t.TempDir(), "bundle")
	if b, err := exec.Command("umoci", "unpack", "--image", dir+":"+ref, bundle).CombinedOutput(); err != nil {
		t.Fatalf("umoci unpack: %v\n%s", err, b)
	}
	cfgPath := filepath.Join(bundle, "config.json")
	raw, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(raw, &cfg); err != nil {
		t.Fatal(err)
	}
	proc := cfg["process"].(map[string]any)
	delete(proc, "rlimits")
	proc["terminal"] = false
	proc["args"] = []string{"/bin/bash", "-c", shell}
	if raw, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	id := fmt.Sprintf("cwm-taskexport-%d", time.Now().UnixNano())
	cmd := exec.CommandContext(ctx, "runc", "run", "--bundle", bundle, id)
	out, err := cmd.CombinedOutput()
	exec.Command("runc", "delete", "--force", id).Run()
	if err != nil {
		t.Fatalf("runc run: %v\n%s", err, out)
	}
	return string(out)
}

// TestImages exports mutate-fix tasks of the example built on bookworm
// with their images and runs each task's image as a harness without
// Docker would, with umoci unpack and runc run: the environment's image
// runs the suite (working directory /repo, the venv on PATH, every test
// passing); a task's image has /testbed at base_commit with a clean tree,
// the gold patch applies there with git apply, and the instance's eval
// script then passes every FAIL_TO_PASS and PASS_TO_PASS test, read as
// SWE-bench's parse_log_pytest reads it.
func TestImages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an environment on a Debian base and runs its images with runc")
	}
	imageTools(t)
	e := bookwormTextkit(t)
	out := t.TempDir()
	mut := filepath.Join(out, "tasks.jsonl")
	if _, err := tasks.Mutate(context.Background(), testSandboxes, e, tasks.MutateOptions{Out: mut, Max: 2, PerFunction: 1,
		Seed: 3, Workers: 2, TimeoutFactor: 3}); err != nil {
		t.Fatalf("Mutate: %v", err)
	}
	ts, err := task.Load(mut)
	if err != nil || len(ts) == 0 {
		t.Fatalf("tasks: %v (%d)", err, len(ts))
	}
	sum, err := SWEBench(context.Background(), testSandboxes, ts, out, Options{Store: env.NewStore(testHome)})
	if err != nil {
		t.Fatalf("SWEBench: %v", err)
	}
	if len(sum.NoImage) != 0 || sum.Exported != len(ts) {
		t.Fatalf("summary: %+v", sum)
	}
	layout := filepath.Join(out, ImagesDir, EnvRef(e))
	got := runImage(t, layout, "latest", `pwd; readlink /testbed; command -v python; python -m pytest -q -p no:cacheprovider 2>&1 | tail -1`)
	lines := strings.Split(strings.TrimSpace(got), "\n")
	if len(lines) < 4 || lines[0] != "/repo" || lines[1] != "repo" || lines[2] != "/venv/bin/python" ||
		!strings.Contains(lines[len(lines)-1], "passed") || strings.Contains(lines[len(lines)-1], "failed") {
		t.Fatalf("in the environment's image:\n%s", got)
	}
	insts, err := ReadInstances(filepath.Join(out, InstancesFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range insts {
		tag := strings.TrimPrefix(in.Image, "cwm/"+EnvRef(e)+":")
		if tag == in.Image || tag == "latest" {
			t.Fatalf("%s: image %s is not the task's", in.InstanceID, in.Image)
		}
		script := "cd /testbed && git rev-parse HEAD && git status --porcelain && echo CLEAN && " +
			"git apply -v - <<'EOF_GOLD'\n" + in.Patch + "EOF_GOLD\n" +
			"cat > /tmp/eval.sh <<'EOF_EVAL'\n" + in.EvalScript + "EOF_EVAL\nbash /tmp/eval.sh 2>&1"
		log := runImage(t, layout, tag, script)
		head, _, _ := strings.Cut(log, "\n")
		if head != in.BaseCommit || !strings.Contains(log, "\nCLEAN\n") {
			t.Errorf("%s: the image's /testbed is not a clean tree at base_commit %s:\n%.2000s", in.InstanceID, in.BaseCommit, log)
			continue
		}
		_, after, _ := strings.Cut(log, startMarker)
		status := ParsePytestLog(after)
		for _, id := range append(append([]string{}, in.FailToPass...), in.PassToPass...) {
			if status[id] != "PASSED" {
				t.Errorf("%s: %s is %q after the gold patch in the image", in.InstanceID, id, status[id])
			}
		}
	}
	t.Logf("%d task images: gold patch applied at base_commit and passing, run with runc", len(insts))
}
