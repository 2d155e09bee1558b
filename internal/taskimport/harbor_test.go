package taskimport

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/envoci/ocitest"
	"cwm/internal/reward"
	"cwm/internal/sandbox"
)

// harborTaskTOML is task.toml as Harbor's registry tasks write it (no
// docker_image: the environment is the Dockerfile). The fields cwm reads
// are those of Harbor's TaskConfig (src/harbor/models/task/config.py):
//
//	class VerifierConfig(BaseModel): timeout_sec: float = 600.0; env: dict[str, str]
//	class SolutionConfig(BaseModel): env: dict[str, str]
//	class EnvironmentConfig(BaseModel):
//	    docker_image: str | None = None; cpus: int = 1; memory_mb: int = 2048
//	    storage_mb: int = 10240; allow_internet: bool = True
//	class TaskConfig(BaseModel):
//	    schema_version: str = "1.1"; task: PackageInfo | None (name: "org/name")
//	    metadata: dict[str, Any]; verifier; agent; environment; solution
//
// and its Task (src/harbor/models/task/task.py) reads instruction.md
// through strip_canary; tests/ goes to /tests, solution/ to /solution.
const harborTaskTOML = `schema_version = "1.3"

[task]
name = "cwm-test/calc-negative"

[metadata]
difficulty = "easy"

[verifier]
timeout_sec = 120.0
env = { CALC_EXPECT = "-1" }

[agent]
timeout_sec = 600.0

[environment]
cpus = 1
memory_mb = 2048
storage_mb = 4096
allow_internet = false
`

// The Dockerfile uses every instruction cwm carries out: ARG before FROM
// (the cached Debian test base in the local registry), RUN (a git
// repository made, a file of the base deleted: a whiteout; a wheel
// fetched from the host's index through the egress relay), WORKDIR, COPY
// of a directory and a file, ENV (kept in the base's Env), USER.
const harborDockerfile = `# The calculator's environment.
ARG REGISTRY
FROM ${REGISTRY}/cwm-test/debian:bookworm AS base
ARG APP=/app
WORKDIR $APP
COPY calc/ ./calc/
COPY README.md \
     ./
ENV CALC_HOME=$APP GREETING="hello world"
RUN rm /etc/debian_version && git init -q . && git add -A && \
    git -c user.name=t -c user.email=t@t commit -q -m calc
RUN python3 -m pip download -q --no-deps --no-cache-dir -d /opt/wheels iniconfig==2.0.0
USER root
`

// harborTest checks the environment the Dockerfile made, then the fix.
const harborTest = `#!/bin/bash
mkdir -p /logs/verifier
ok=1
[ "$GREETING" = "hello world" ] && [ "$CALC_HOME" = /app ] && [ "$(pwd)" = /app ] || ok=0
[ ! -e /etc/debian_version ] && [ -f /app/README.md ] && [ -f /opt/wheels/iniconfig-2.0.0-py3-none-any.whl ] || ok=0
[ -d /tests ] && [ ! -e /app/tests ] || ok=0
python3 -c "import sys; from calc import add; sys.exit(0 if add(2, -3) == $CALC_EXPECT else 1)" || ok=0
echo $ok > /logs/verifier/reward.txt
`

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for n, text := range files {
		writeFile(t, filepath.Join(dir, n), text)
		if strings.HasSuffix(n, ".sh") {
			os.Chmod(filepath.Join(dir, n), 0o755)
		}
	}
}

// TestHarborDockerfile imports a Harbor task directory written by hand in
// Harbor's layout, whose environment is a Dockerfile cwm carries out
// (FROM the Debian test base pushed to a local registry, ARG, RUN,
// WORKDIR, COPY, ENV, USER): its base is built, its tests are staged out
// of the working directory, and it validates (solution/solve.sh then
// tests/test.sh: reward 1; tests/test.sh alone: reward 0), its gold
// patch read from what solve.sh changed. Beside it, tasks that do not
// hold are kept out with their reasons: an instruction cwm does not carry
// out (named with its line), a COPY that leaves the build context, a RUN
// that fails, a task whose tests pass without the solution, one without
// solution/solve.sh.
func TestHarborDockerfile(t *testing.T) {
	if ocitest.Binary() == "" {
		t.Skip("docker-registry (Debian's CNCF Distribution registry) is not installed: make setup installs it")
	}
	reg := ocitest.Start(t, "", "")
	push(t, debianImage(t, "/"), reg.Host+"/cwm-test/debian:bookworm")
	dockerfile := strings.Replace(harborDockerfile, "ARG REGISTRY", "ARG REGISTRY="+reg.Host, 1)

	root := t.TempDir()
	good := map[string]string{
		"instruction.md":               "<!-- canary GUID 0000 -->\n\nadd(2, -3) is 5, not -1.\n",
		"task.toml":                    harborTaskTOML,
		"environment/Dockerfile":       dockerfile,
		"environment/calc/__init__.py": calcRepo["calc/__init__.py"],
		"environment/README.md":        "calc\n",
		"tests/test.sh":                harborTest,
		"solution/solve.sh":            "#!/bin/bash\nset -e\ncat > calc/__init__.py <<'EOF'\n" + calcFix + "EOF\n",
	}
	writeTree(t, filepath.Join(root, "calc"), good)
	variant := func(name string, change map[string]string, drop ...string) {
		files := map[string]string{}
		for k, v := range good {
			files[k] = v
		}
		for k, v := range change {
			files[k] = v
		}
		for _, k := range drop {
			delete(files, k)
		}
		files["task.toml"] = strings.Replace(files["task.toml"], "calc-negative", name, 1)
		writeTree(t, filepath.Join(root, name), files)
	}
	variant("healthcheck", map[string]string{"environment/Dockerfile": dockerfile + "HEALTHCHECK CMD true\n"})
	variant("escape", map[string]string{"environment/Dockerfile": strings.Replace(dockerfile, "COPY calc/ ./calc/", "COPY ../tests/ ./calc/", 1)})
	variant("run-fails", map[string]string{"environment/Dockerfile": dockerfile + "RUN exit 3\n"})
	variant("noop", map[string]string{"tests/test.sh": "#!/bin/bash\nmkdir -p /logs/verifier; echo 1 > /logs/verifier/reward.txt\n"})
	variant("no-solution", nil, "solution/solve.sh")

	policy, err := egress.DefaultPolicy(context.Background())
	if err != nil {
		t.Fatalf("the host's package index: %v", err)
	}
	home := t.TempDir()
	o := Options{Format: "harbor", Sandboxes: Sandboxes{Runtime: rt, Store: base.NewStore(home), Envs: env.NewStore(home)},
		Base: basebuild.Options{Runtime: rt}, Runs: 2, Egress: &policy}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	t0 := time.Now()
	ts, rep, err := Import(ctx, root, o)
	if err != nil {
		t.Fatalf("Import: %v", err)
	}
	t.Logf("%s in %.1fs", rep.Summary(), time.Since(t0).Seconds())
	if len(ts) != 1 || ts[0].InstanceID != "cwm-test/calc-negative" {
		t.Fatalf("kept %d tasks, want cwm-test/calc-negative alone; report: %+v", len(ts), rep.Left)
	}
	k := ts[0]
	if k.ProblemStatement != "add(2, -3) is 5, not -1." {
		t.Errorf("instruction = %q, want the canary line stripped", k.ProblemStatement)
	}
	if k.Imported.Workdir != "/app" || k.Imported.HiddenTests != HarborStage {
		t.Errorf("workdir %q, hidden tests %q; want /app and %s", k.Imported.Workdir, k.Imported.HiddenTests, HarborStage)
	}
	if !strings.Contains(k.Patch, "+    return a + b") || len(patchFiles(k.Patch)) != 1 {
		t.Errorf("gold patch is not solve.sh's change of calc/__init__.py:\n%s", k.Patch)
	}
	b := o.Sandboxes.Store.Get(k.Imported.Base)
	if b == nil || b.Source.Kind != base.KindDockerfile || b.Source.Ref != filepath.Join(root, "calc", "environment", "Dockerfile") || b.User != "root" {
		t.Fatalf("base %+v, want one built from the Dockerfile, USER root", b)
	}
	want := map[string]string{
		"healthcheck": "HEALTHCHECK is not supported",
		"escape":      "source ../tests/ is outside the build context",
		"run-fails":   "exit status 3",
		"noop":        "reward 1 without the solution",
		"no-solution": "no solution/solve.sh",
	}
	classes := map[string]string{"healthcheck": ReasonBadRow, "escape": ReasonBadRow, "run-fails": ReasonBuild,
		"noop": ReasonNoopPasses, "no-solution": ReasonBadRow}
	for _, l := range rep.Left {
		name := strings.TrimPrefix(l.InstanceID, "cwm-test/")
		if w, ok := want[name]; !ok || !strings.Contains(l.Reason, w) || l.Class != classes[name] {
			t.Errorf("%s left out as %s: %s; want %s: ...%s...", l.InstanceID, l.Class, l.Reason, classes[name], w)
		}
		if name == "healthcheck" && !strings.Contains(l.Reason, "healthcheck/environment/Dockerfile:14: ") {
			t.Errorf("the refusal does not name the file and line: %s", l.Reason)
		}
		delete(want, name)
	}
	if len(want) != 0 {
		t.Errorf("not left out: %v", want)
	}

	// The tests are out of the working directory until grading, and the
	// empty patch and the gold patch grade 0 and 1 through gradeHarbor as
	// a candidate's would.
	for _, c := range []struct {
		patch string
		want  float64
	}{{"", 0}, {k.Patch, 1}} {
		r, err := o.Sandboxes.gradeHarbor(ctx, &k, []string{"CALC_EXPECT=-1"}, false, c.patch)
		if err != nil || !r.OK || r.Reward != c.want {
			t.Errorf("gradeHarbor(patch of %d bytes) = %+v, %v; want reward %v", len(c.patch), r, err, c.want)
		}
	}
	// The other stages grade it the same way (reward.Grade, which forage,
	// serve, select and cwm grade use): the gold patch resolves, the empty
	// one does not.
	e := o.Sandboxes.Envs.Get(k.EnvID)
	if e == nil {
		t.Fatalf("no environment %s recorded for the task", k.EnvID)
	}
	for _, c := range []struct {
		patch string
		want  bool
	}{{"", false}, {k.Patch, true}} {
		r, err := reward.Grade(ctx, env.NewSandboxes(rt), e, &k, c.patch)
		if err != nil || r.Resolved != c.want || len(r.Tests) != 1 {
			t.Errorf("reward.Grade(patch of %d bytes) = %+v, %v; want resolved %v", len(c.patch), r, err, c.want)
		}
	}
	// An episode through cwm serve sees neither tests/ nor solution/.
	checkServed(t, ctx, home, k, "pwd; ls /cwm-harbor /tests /solution 2>&1 | grep -c 'No such'", "/app\n3\n")
	sb, err := rt.New(ctx, sandbox.Config{Base: b.Rootfs(), Env: b.SandboxEnv(nil), Workdir: "/app"})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	res, err := sb.Exec(ctx, sandbox.Cmd{Shell: "ls -A /app; ls /cwm-harbor/tests; test -e /tests && echo TESTS-IN-PLACE"})
	if err != nil {
		t.Fatal(err)
	}
	if out := string(res.Stdout); strings.Contains(out, "TESTS-IN-PLACE") || !strings.Contains(out, "test.sh") || strings.Contains(out, "tests\n") {
		t.Errorf("the agent's view of the base:\n%s", out)
	}
}
