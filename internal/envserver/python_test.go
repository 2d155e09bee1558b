package envserver

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/model/modeltest"
)

// python is the interpreter the client's tests run on: Debian's, with the
// standard library only: /ws goes through the client's own WebSocket
// code (cwmserve._ws), as it does wherever websockets 11+ is missing.
const python = "/usr/bin/python3"

func pythonDir(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(python); err != nil {
		t.Skipf("no %s", python)
	}
	d, err := filepath.Abs("../../clients/python")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// The Python client's unit tests pass against a real server.
func TestPythonClient(t *testing.T) {
	dir := pythonDir(t)
	const token = "python-token"
	f := newFixture(t, func(o *Options) { o.Token = token })
	cmd := exec.Command(python, "-m", "unittest", "-v", "tests.test_client")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CWM_SERVE_URL="+f.url, "CWM_SERVE_TOKEN="+token, "CWM_SERVE_TASK=calc-1", "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") || strings.Contains(string(out), "skipped") {
		t.Fatalf("python client tests: %v\n%s", err, out)
	}
}

// The GRPO example runs a group of four against a scripted model that
// solves the task for even seeds and idles for odd ones: two rewards of 1,
// two of -1, advantages of +1 and -1.
func TestGRPOExample(t *testing.T) {
	dir := pythonDir(t)
	f := newFixture(t, func(o *Options) { o.Limits.MaxTurns = 4 })
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if r.Seed != nil && *r.Seed%2 == 1 {
			return modeltest.Tool("bash", "true")
		}
		return []modeltest.Reply{
			modeltest.Tool("edit", fixAdd),
			modeltest.Tool("bash", "git diff > /tmp/fix.patch"),
			modeltest.Tool("submit", "/tmp/fix.patch"),
		}[min(r.Turn(), 2)]
	}, false)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	cmd := exec.Command(python, filepath.Join(dir, "examples", "grpo_group.py"), "--server", f.url, "--task", "calc-1",
		"--base-url", srv.URL, "--model", "fake", "-k", "4")
	cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("grpo_group.py: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 5 {
		t.Fatalf("grpo_group.py printed %d lines, want 4 samples and a summary:\n%s", len(lines), out)
	}
	for i, l := range lines[:4] {
		var s struct {
			Reward, Advantage float64
			ExitReason        string `json:"exit_reason"`
		}
		json.Unmarshal([]byte(l), &s)
		want := map[bool]float64{true: 1, false: -1}[i%2 == 0]
		if s.Reward != want || s.Advantage != want {
			t.Errorf("sample %d: %s; want reward and advantage %v", i, l, want)
		}
	}
	if !strings.Contains(lines[4], `"resolved": 2`) {
		t.Errorf("summary %s, want 2 resolved", lines[4])
	}
}
