package envserver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"cwm/internal/pytestenv"
	"cwm/internal/tracer"
)

// openenvClients are the OpenEnv client releases the conformance suite
// drives cwm serve through: the current one and the last under the old
// name, which many trainers still pin. Each has its pinned closure in
// testdata/pyreq.
var openenvClients = []struct{ flavor, version string }{
	{"openenv", "0.10.0"},
	{"openenv-core", "0.3.0"},
}

// badTask is a task whose bug patch does not apply: a valid reset whose
// episode cannot start (FACTORY_ERROR).
var badTask = map[string]any{"instance_id": "bad-1", "env_id": "calc-env",
	"bug_patch": "diff --git a/nope b/nope\n--- a/nope\n+++ b/nope\n@@ -1 +1 @@\n-x\n+y\n", "FAIL_TO_PASS": []string{"t"}}

// A real cwm serve driven through OpenEnv's own GenericEnvClient, async
// and .sync(), of each release: resets of the three kinds, steps, state,
// close, every error code OpenEnv defines, capacity. Each check of
// testdata/openenv_conformance.py is a subtest: docs/serve.md's matrix
// names them.
func TestOpenEnvClients(t *testing.T) {
	for _, c := range openenvClients {
		t.Run(c.flavor+"-"+c.version, func(t *testing.T) {
			t.Parallel() // the two venvs are made at once on a cold cache
			py := pytestenv.Python(t, "testdata/pyreq/"+c.flavor+".txt")
			const token = "openenv-t0ken"
			const maxSessions = 3
			f := newFixture(t, func(o *Options) { o.Token, o.MaxSessions = token, maxSessions })
			f.srv.opts.NewTracer = func(ctx context.Context) (*tracer.Pool, error) {
				return tracer.NewPool(ctx, f.rt, tracer.Options{Workers: 1})
			}
			clientDir, err := filepath.Abs("../../clients/python")
			if err != nil {
				t.Fatal(err)
			}
			cfg, _ := json.Marshal(map[string]any{"url": f.url, "token": token, "flavor": c.flavor, "client_dir": clientDir,
				"task_id": f.task.InstanceID, "fix": fixAdd, "env": "calc-env", "bad_task": badTask, "max_sessions": maxSessions,
				"trace_code": "def f(a, b):\n    y = a\n    for i in range(b):\n        y += i\n    return y\n", "trace_call": "f(1, 3)"})
			checks := runChecks(t, f, py, "testdata/openenv_conformance.py", string(cfg))
			checkSubtests(t, checks, "auth", "auth_refused", "reset_swe_async", "submit_reward_async", "reset_trace_sync",
				"reset_shell_sync", "close", "error_VALIDATION_ERROR", "error_bad_reset", "error_SESSION_ERROR", "error_FACTORY_ERROR",
				"error_INVALID_JSON", "error_UNKNOWN_TYPE", "error_EXECUTION_ERROR", "error_CAPACITY_REACHED", "clone_subclass", "concurrent_sessions")
		})
	}
}

// TRL's environment_factory contract: a class written as TRL's docs show,
// wrapping OpenEnv's client (openenv 0.10.0), its tools rendered by
// transformers' get_json_schema (transformers installed without torch),
// reset with a dataset row, its tools called and its reward read as
// TRL 1.16's GRPOTrainer does (testdata/trl_environment.py).
func TestTRLEnvironmentFactory(t *testing.T) {
	t.Parallel()
	py := pytestenv.Python(t, "testdata/pyreq/trl.txt")
	const token = "trl-t0ken"
	f := newFixture(t, func(o *Options) { o.Token = token })
	cfg, _ := json.Marshal(map[string]any{"url": f.url, "token": token, "task_id": f.task.InstanceID})
	checks := runChecks(t, f, py, "testdata/trl_environment.py", string(cfg))
	checkSubtests(t, checks, "tools", "rollout")
}

// clients/python installs with pip (its pyproject.toml, built without
// network by a venv of setuptools and wheel) and reports its version;
// its OpenEnv subclass imports beside openenv.
func TestPythonClientInstalls(t *testing.T) {
	t.Parallel() // its venvs are made beside the others on a cold cache
	pip := pytestenv.Python(t, "testdata/pyreq/pybuild.txt")
	py := pytestenv.Python(t, "testdata/pyreq/openenv.txt")
	dir, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	// setuptools builds in the source tree (build/, *.egg-info): build
	// a copy, and keep clients/python clean.
	src := filepath.Join(t.TempDir(), "python")
	if err := os.CopyFS(src, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	target := t.TempDir()
	cmd := exec.Command(pip, "-m", "pip", "install", "--quiet", "--no-index", "--no-deps", "--no-build-isolation",
		"--disable-pip-version-check", "--target", target, src)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pip install ./clients/python: %v\n%s", err, out)
	}
	probe := exec.Command(py, "-c", "import importlib.metadata as m, cwmserve, cwmserve.openenv; print(m.version('cwmserve'), cwmserve.__version__, cwmserve.openenv.CwmEnvClient.__mro__[1].__name__)")
	probe.Env = append(os.Environ(), "PYTHONPATH="+target)
	probe.Dir = t.TempDir() // not clients/python: the installed copy
	out, err := probe.CombinedOutput()
	if err != nil {
		t.Fatalf("import the installed client: %v\n%s", err, out)
	}
	if f := strings.Fields(string(out)); len(f) != 3 || f[0] != f[1] || f[2] != "GenericEnvClient" {
		t.Errorf("installed client says %q, want its version twice and GenericEnvClient", out)
	}
}

// checkSubtests makes each named check of a script a subtest, which
// fails with the script's traceback; a check the script never ran fails.
func checkSubtests(t *testing.T, checks map[string]checkResult, names ...string) {
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			switch r, ok := checks[name]; {
			case !ok:
				t.Fatalf("the script ran no check %s", name)
			case !r.OK:
				t.Errorf("%s", r.Detail)
			default:
				t.Logf("%s", r.Detail)
			}
		})
	}
}

// checkResult is one line of a conformance script's output.
type checkResult struct {
	Check  string `json:"check"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
	// Need asks the test to do something the script cannot: "break"
	// the sandbox of Episode.
	Need    string `json:"need"`
	Episode string `json:"episode"`
}

// runChecks runs a conformance script with the venv's python and
// returns its checks by name, serving its requests on the way.
func runChecks(t testing.TB, f *fixture, py, script, arg string) map[string]checkResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, script, arg)
	cmd.Env = append(os.Environ(), "PYTHONUNBUFFERED=1")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	checks := map[string]checkResult{}
	var other []string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var r checkResult
		if json.Unmarshal(sc.Bytes(), &r) != nil {
			other = append(other, sc.Text())
			continue
		}
		if r.Need == "break" {
			fmt.Fprintln(stdin, breakSandbox(f, r.Episode))
			continue
		}
		checks[r.Check] = r
	}
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		t.Errorf("%s: %v\n%s\n%s", script, err, strings.Join(other, "\n"), stderr.String())
	}
	return checks
}

// breakSandbox kills the init of a shell episode's sandbox (the parent
// of the processes in its cgroup), and so every process in it, as if the
// sandbox had died: the episode's next step fails in the server.
func breakSandbox(f *fixture, id string) string {
	f.srv.mu.Lock()
	e := f.srv.entries[id]
	f.srv.mu.Unlock()
	if e == nil {
		return "no such episode"
	}
	e.mu.Lock()
	te, ok := e.ep.(*toolEpisode)
	e.mu.Unlock()
	if !ok || te.sb == nil {
		return "not a shell episode"
	}
	sbID := te.sb.ID()
	procs, _ := filepath.Glob("/proc/[0-9]*/cgroup")
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || !inCgroup(string(b), sbID) {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		init := parentOf(pid)
		if init <= 1 || init == os.Getpid() {
			continue
		}
		if err := syscall.Kill(init, syscall.SIGKILL); err != nil {
			return fmt.Sprintf("kill the sandbox's init %d: %v", init, err)
		}
		// The runtime knows its sandbox is gone once it has reaped init.
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			if _, err := os.Stat(fmt.Sprintf("/proc/%d", init)); err != nil {
				return "broken"
			}
		}
		return fmt.Sprintf("the sandbox's init %d still there 30s after SIGKILL", init)
	}
	return "no process of sandbox " + sbID
}

// inCgroup reports whether a /proc/PID/cgroup file puts the process in
// the cgroup of sandbox id.
func inCgroup(cgroups, id string) bool {
	for _, line := range strings.Split(cgroups, "\n") {
		if i := strings.Index(line, id); i >= 0 && (i+len(id) == len(line) || line[i+len(id)] == '/') {
			return true
		}
	}
	return false
}

// parentOf is a process's parent's pid (0 if it is gone).
func parentOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis: state, ppid.
	rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
	fields := strings.Fields(rest)
	if len(fields) < 2 {
		return 0
	}
	ppid, _ := strconv.Atoi(fields[1])
	return ppid
}

// BenchmarkPythonClientsStep: the step latency of one /ws session
// through OpenEnv's GenericEnvClient (openenv 0.10.0, .sync()) and
// through cwm's own Python client, on one server, b.N steps of `true` per
// client in each of three alternating rounds (testdata/client_latency.py).
func BenchmarkPythonClientsStep(b *testing.B) {
	py := pytestenv.Python(b, "testdata/pyreq/openenv.txt")
	// Episodes long enough for every step of a round.
	f := newFixture(b, func(o *Options) { o.Limits.MaxTurns, o.Limits.ContextTokens = 1<<20, 1<<40 })
	dir, err := filepath.Abs("../../clients/python")
	if err != nil {
		b.Fatal(err)
	}
	cfg, _ := json.Marshal(map[string]any{"url": f.url, "env": "calc-env", "steps": b.N, "rounds": 3, "client_dir": dir})
	out, err := exec.Command(py, "testdata/client_latency.py", string(cfg)).CombinedOutput()
	if err != nil {
		b.Fatalf("client_latency.py: %v\n%s", err, out)
	}
	var r map[string]struct{ P50, P90 float64 }
	if err := json.Unmarshal(out, &r); err != nil {
		b.Fatalf("client_latency.py said %s: %v", out, err)
	}
	b.ReportMetric(r["openenv"].P50, "openenv-p50-ms")
	b.ReportMetric(r["openenv"].P90, "openenv-p90-ms")
	b.ReportMetric(r["cwm"].P50, "cwm-p50-ms")
	b.ReportMetric(r["cwm"].P90, "cwm-p90-ms")
	b.ReportMetric(r["cwm"].P50/r["openenv"].P50, "cwm/openenv-p50")
}
