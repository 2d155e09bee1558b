package taskexport

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/env"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// harborSchema is Harbor's TaskConfig (src/harbor/models/task/config.py:
// TaskConfig, VerifierConfig, AgentConfig, EnvironmentConfig), quoted as
// the section, key and type each key must have; the harbor package needs
// Python 3.12 or later, which this machine's 3.11 is not, so task.toml is
// checked against it with tomllib:
//
//	class VerifierConfig(BaseModel):  timeout_sec: float = 600.0; env: dict[str, str]
//	class AgentConfig(BaseModel):     timeout_sec: float | None = None
//	class EnvironmentConfig(BaseModel):
//	    build_timeout_sec: float = 600.0; docker_image: str | None = None
//	    cpus: int = 1; memory_mb: int = 2048; storage_mb: int = 10240
//	    allow_internet: bool = True
//	class TaskConfig(BaseModel):
//	    schema_version: str; metadata: dict[str, Any]; verifier; agent; environment
const harborCheck = `
import sys, tomllib
schema = {
    "": {"schema_version": str, "metadata": dict, "verifier": dict, "agent": dict, "environment": dict},
    "verifier": {"timeout_sec": float, "env": dict},
    "agent": {"timeout_sec": float},
    "environment": {"build_timeout_sec": float, "docker_image": str, "cpus": int, "memory_mb": int,
                    "storage_mb": int, "allow_internet": bool},
}
for path in sys.argv[1:]:
    c = tomllib.load(open(path, "rb"))
    for section, keys in schema.items():
        d = c if section == "" else c.get(section, {})
        for k, v in d.items():
            if section == "" or k in keys:
                if k in keys and not isinstance(v, keys[k]):
                    sys.exit("%s: %s.%s is %r, not %s" % (path, section, k, v, keys[k].__name__))
            else:
                sys.exit("%s: [%s] has %s, which Harbor's schema lacks" % (path, section, k))
    assert c["environment"]["allow_internet"] is False, path
    assert c["environment"]["docker_image"], path
    assert c["verifier"]["timeout_sec"] > 0 and c["agent"]["timeout_sec"] > 0, path
print("ok")
`

// checkHarbor exports ts for Harbor, checks every task.toml against
// Harbor's schema and runs every tests/test.sh in cwm's sandbox on the
// task's buggy tree (its environment's, with its bug): reward 1 after
// solution/solve.sh, 0 without it. It returns how many of each. The first
// roundTrip directories are imported back (roundTripHarbor), for which
// the images are written; without a round trip they are not.
func checkHarbor(t *testing.T, ts []task.Task, roundTrip int) (ones, zeros int) {
	ctx := context.Background()
	out := t.TempDir()
	sum, err := Harbor(ctx, testSandboxes, ts, out, Options{Store: env.NewStore(testHome), NoImages: roundTrip == 0})
	if err != nil {
		t.Fatalf("Harbor: %v", err)
	}
	var tomls []string
	byDir := map[string]task.Task{}
	for _, tk := range ts {
		byDir[HarborDir(tk.InstanceID)] = tk
	}
	dirs, _ := filepath.Glob(filepath.Join(out, "*", "task.toml"))
	for _, p := range dirs {
		tomls = append(tomls, p)
		for _, f := range []string{"instruction.md", "environment/Dockerfile", "tests/test.sh", "solution/solve.sh"} {
			if _, err := os.Stat(filepath.Join(filepath.Dir(p), f)); err != nil {
				t.Errorf("%s: %v", filepath.Dir(p), err)
			}
		}
	}
	if len(tomls) != sum.Exported || sum.Exported == 0 {
		t.Fatalf("%d task.toml files for %d exported tasks", len(tomls), sum.Exported)
	}
	if b, err := exec.Command("/usr/bin/python3", append([]string{"-c", harborCheck}, tomls...)...).CombinedOutput(); err != nil {
		t.Fatalf("task.toml against Harbor's schema: %v\n%s", err, b)
	}
	sbs := map[string]*sandbox.Sandbox{}
	defer func() {
		for _, sb := range sbs {
			sb.Close()
		}
	}()
	for _, p := range tomls {
		dir := filepath.Dir(p)
		tk := byDir[filepath.Base(dir)]
		sb := sbs[tk.EnvID]
		if sb == nil {
			if sb, err = testSandboxes.Open(ctx, env.NewStore(testHome).Get(tk.EnvID)); err != nil {
				t.Fatal(err)
			}
			sbs[tk.EnvID] = sb
		}
		for _, gold := range []bool{true, false} {
			r := reward(t, sb, dir, tk.BugPatch, gold)
			switch {
			case gold && r == "1":
				ones++
			case !gold && r == "0":
				zeros++
			default:
				t.Errorf("%s: reward %q with gold=%v", filepath.Base(dir), r, gold)
			}
		}
	}
	t.Logf("harbor: %d tasks, reward 1 for gold %d, reward 0 for empty %d", len(tomls), ones, zeros)
	if roundTrip > 0 {
		roundTripHarbor(t, out, ts, roundTrip)
	}
	return ones, zeros
}

// reward runs a Harbor task's tests/test.sh in sb on the buggy tree,
// after solution/solve.sh when gold is set, and returns the reward file.
func reward(t *testing.T, sb *sandbox.Sandbox, dir, bugPatch string, gold bool) string {
	t.Helper()
	ctx := context.Background()
	if err := sb.Reset(ctx); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tests/test.sh", "solution/solve.sh"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := sb.WriteFile(ctx, "/tmp/"+filepath.Base(f), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := sb.WriteFile(ctx, "/tmp/bug.patch", []byte(bugPatch), 0o644); err != nil {
		t.Fatal(err)
	}
	sh := "true && "
	if bugPatch != "" { // an issue-fix task's tree is its environment's
		sh = "git apply /tmp/bug.patch && "
	}
	if gold {
		sh += "bash /tmp/solve.sh && "
	}
	sh += "bash /tmp/test.sh; cat " + RewardFile
	res, err := sb.Exec(ctx, sandbox.Cmd{Shell: sh, Dir: env.RepoRoot, Timeout: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(res.Stdout))
}
