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
			cfg, _ := json.Marshal(map[string]any{"url": f.url, "token": token, "flavor": c.flavor,
				"task_id": f.task.InstanceID, "fix": fixAdd, "env": "calc-env", "bad_task": badTask, "max_sessions": maxSessions,
				"trace_code": "def f(a, b):\n    y = a\n    for i in range(b):\n        y += i\n    return y\n", "trace_call": "f(1, 3)"})
			checks := runChecks(t, f, py, "testdata/openenv_conformance.py", string(cfg))
			for _, name := range []string{"auth", "auth_refused", "reset_swe_async", "submit_reward_async", "reset_trace_sync",
				"reset_shell_sync", "close", "error_VALIDATION_ERROR", "error_SESSION_ERROR", "error_FACTORY_ERROR",
				"error_INVALID_JSON", "error_UNKNOWN_TYPE", "error_EXECUTION_ERROR", "error_CAPACITY_REACHED", "concurrent_sessions"} {
				t.Run(name, func(t *testing.T) {
					r, ok := checks[name]
					switch {
					case !ok:
						t.Fatalf("the script ran no check %s", name)
					case !r.OK:
						t.Errorf("%s", r.Detail)
					default:
						t.Logf("%s", r.Detail)
					}
				})
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
func runChecks(t *testing.T, f *fixture, py, script, arg string) map[string]checkResult {
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
