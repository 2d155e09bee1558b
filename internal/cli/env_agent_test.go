package cli

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"cwm/internal/model/modeltest"
)

// TestEnvBuildSetupAgent builds a repository that recipe detection cannot
// set up (its unittest checks are check_*.py files in checks/, which
// neither pytest nor unittest discovery finds by default) with a scripted
// setup agent on the local fake model server: the agent reads the README,
// writes its recipe and submits it; cwm builds with it, provenance agent,
// and writes the setup trajectory.
func TestEnvBuildSetupAgent(t *testing.T) {
	home := t.TempDir()
	t.Setenv("CWM_HOME", home)
	repo := filepath.Join(t.TempDir(), "odd")
	files := map[string]string{
		"README.md":            "Run the checks with: python -m unittest discover -s checks -p 'check_*.py'\n",
		"odd/__init__.py":      "def twice(x):\n    return 2 * x\n",
		"checks/check_odd.py":  "import unittest\n\nfrom odd import twice\n\n\nclass Twice(unittest.TestCase):\n    def test_two(self):\n        self.assertEqual(twice(2), 4)\n\n    def test_zero(self):\n        self.assertEqual(twice(0), 0)\n",
		"checks/__init__.py":   "",
		"checks/helpers.py":    "",
		"odd/unrelated_doc.md": "nothing\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	replies := []modeltest.Reply{
		modeltest.Tool("bash", "ls /repo /repo/checks && cat /repo/README.md"),
		modeltest.Tool("bash", "cd /repo && python -m unittest discover -s checks -p 'check_*.py' 2>&1 | tail -1"),
		modeltest.Tool("bash", "cat > /repo/cwm-setup.json <<'EOF'\n{\"install\": [], \"test\": \"python -m unittest discover -s checks -p 'check_*.py'\"}\nEOF\ngit -C /repo add -N cwm-setup.json && git -C /repo diff -- cwm-setup.json > /tmp/setup.patch"),
		modeltest.Tool("submit", "/tmp/setup.patch"),
		modeltest.Text("## Summary\nThe checks run with unittest discovery."),
	}
	srv, err := modeltest.Start(func(r *modeltest.Request) modeltest.Reply {
		if t := r.Turn(); t < len(replies) {
			return replies[t]
		}
		return modeltest.Text("done")
	}, true)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	// Detection alone: unusable.
	code, _, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "1", "--no-coverage", "--name", "odd", repo)
	if code != 1 || !strings.Contains(errOut, "is not usable") {
		t.Fatalf("env build without the agent = %d, want 1 (not usable)\n%s", code, errOut)
	}
	code, out, errOut := runCLI(t, "", "env", "build", "--offline", "--runs", "1", "--no-coverage", "--name", "odd", "--json",
		"--model", "fake-model", "--base-url", srv.URL, repo)
	if code != 0 {
		t.Fatalf("env build with the setup agent = %d\n%s", code, errOut)
	}
	var m struct {
		Usable bool `json:"usable"`
		Test   struct {
			Command    string `json:"command"`
			Provenance string `json:"provenance"`
		} `json:"test"`
		Counts struct {
			Pass int `json:"pass"`
		} `json:"counts"`
		Baseline []struct {
			ID string `json:"id"`
		} `json:"baseline"`
	}
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("manifest: %v\n%s", err, out)
	}
	if !m.Usable || m.Counts.Pass != 2 || m.Test.Provenance != "agent" || !strings.Contains(m.Test.Command, "check_*.py") {
		t.Errorf("agent's environment = usable %v, %d pass, test %q from %q; want usable, 2 pass, the agent's command", m.Usable, m.Counts.Pass, m.Test.Command, m.Test.Provenance)
	}
	if len(srv.Requests()) != len(replies) {
		t.Errorf("the agent made %d model calls, want %d", len(srv.Requests()), len(replies))
	}
	f, err := os.Open(filepath.Join(home, "setup-trajectories.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	var tr struct {
		TaskID         string  `json:"task_id"`
		ExitReason     string  `json:"exit_reason"`
		SubmittedPatch *string `json:"submitted_patch"`
		Steps          []any   `json:"steps"`
	}
	if !sc.Scan() || json.Unmarshal(sc.Bytes(), &tr) != nil {
		t.Fatalf("no setup trajectory")
	}
	if tr.TaskID != "setup/odd" || tr.ExitReason != "submitted" || tr.SubmittedPatch == nil || len(tr.Steps) != 4 {
		t.Errorf("setup trajectory = task %q, exit %q, %d steps; want setup/odd, submitted, 4 steps", tr.TaskID, tr.ExitReason, len(tr.Steps))
	}
	// Flags are checked before anything is built.
	if code, _, errOut := runCLI(t, "", "env", "build", "--agent", repo); code != 2 || !strings.Contains(errOut, "--agent needs --model and --base-url") {
		t.Errorf("env build --agent without a model = %d, %q", code, errOut)
	}
}
