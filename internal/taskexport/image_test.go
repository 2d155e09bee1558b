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
	"cwm/internal/envoci"
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

// TestEnvImage writes the image of the example's environment on bookworm
// and runs its tests in it with umoci and runc: the working directory is
// the repository, the venv is on PATH, and the suite passes.
func TestEnvImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an environment on a Debian base and runs its image with runc")
	}
	imageTools(t)
	e := bookwormTextkit(t)
	dir := filepath.Join(t.TempDir(), "images")
	if _, err := envoci.WriteImage(e, dir, "latest"); err != nil {
		t.Fatal(err)
	}
	out := runImage(t, dir, "latest", `pwd; readlink /testbed; command -v python; python -m pytest -q -p no:cacheprovider 2>&1 | tail -1`)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 4 || lines[0] != "/repo" || lines[1] != "repo" || lines[2] != "/venv/bin/python" ||
		!strings.Contains(lines[len(lines)-1], "passed") || strings.Contains(lines[len(lines)-1], "failed") {
		t.Fatalf("in the image:\n%s", out)
	}
}
