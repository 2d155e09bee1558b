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

	"cwm/internal/env"
	"cwm/internal/logparse"
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
	e, _ := bookwormEnv(t, "../../examples/textkit", "textkit-bookworm", "")
	return e
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

// checkImages runs the images of insts (exported to out, on e) as a
// harness without Docker would, with umoci unpack and runc run: the
// working directory is /repo, /testbed links to it, the venv's python is
// first on PATH; /testbed is at base_commit with a clean tree, the gold
// patch applies there with git apply, and the instance's eval script then
// passes every FAIL_TO_PASS and PASS_TO_PASS test, read as SWE-bench's
// parse_log_pytest reads it.
func checkImages(t *testing.T, e *env.Env, out string, insts []Instance) {
	t.Helper()
	t0 := time.Now()
	layout := filepath.Join(out, ImagesDir, EnvRef(e))
	for _, in := range insts {
		tag := strings.TrimPrefix(in.Image, "cwm/"+EnvRef(e)+":")
		if tag == in.Image || tag == "latest" {
			t.Fatalf("%s: image %s is not the task's", in.InstanceID, in.Image)
		}
		// One stream: git apply -v writes to stderr, which would otherwise
		// race the lines before it.
		script := "pwd && readlink /testbed && command -v python && cd /testbed && git rev-parse HEAD && git status --porcelain && echo CLEAN && " +
			"git apply -v - 2>&1 <<'EOF_GOLD'\n" + in.Patch + "EOF_GOLD\n" +
			"cat > /tmp/eval.sh <<'EOF_EVAL'\n" + in.EvalScript + "EOF_EVAL\nbash /tmp/eval.sh 2>&1"
		log := runImage(t, layout, tag, script)
		if first := strings.SplitN(log, "\n", 5); len(first) < 5 || first[0] != "/repo" || first[1] != "repo" || first[2] != "/venv/bin/python" {
			t.Errorf("%s: working directory, /testbed and python in the image:\n%.500s", in.InstanceID, log)
			continue
		}
		if head := strings.SplitN(log, "\n", 5)[3]; head != in.BaseCommit || !strings.Contains(log, "\nCLEAN\n") {
			t.Errorf("%s: the image's /testbed is not a clean tree at base_commit %s:\n%.2000s", in.InstanceID, in.BaseCommit, log)
			continue
		}
		_, after, _ := strings.Cut(log, startMarker)
		status := logparse.Pytest(after)
		for _, id := range append(append([]string{}, in.FailToPass...), in.PassToPass...) {
			if status[id] != "PASSED" {
				t.Errorf("%s: %s is %q after the gold patch in the image", in.InstanceID, id, status[id])
			}
		}
	}
	t.Logf("%d task images run with umoci and runc: clean at base_commit, the gold patch applies and passes (%.0fs)", len(insts), time.Since(t0).Seconds())
}
