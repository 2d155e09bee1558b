package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startServe starts cwm serve in a process of its own on home and returns
// it with its URL.
func startServe(t *testing.T, home, tasks string) (*exec.Cmd, string, *bytes.Buffer) {
	t.Helper()
	addr := filepath.Join(t.TempDir(), "addr")
	cmd := cliChild(t, home, "serve", "--listen", "127.0.0.1:0", "--addr-file", addr, "--tasks", tasks, "--drain-grace", "20s")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if b, err := os.ReadFile(addr); err == nil && bytes.HasSuffix(b, []byte("\n")) {
			return cmd, strings.TrimSpace(string(b)), &out
		}
	}
	t.Fatalf("cwm serve did not start:\n%s", out.String())
	return nil, "", nil
}

func post(t *testing.T, url string, body any) map[string]any {
	t.Helper()
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var m map[string]any
	json.Unmarshal(raw, &m)
	if resp.StatusCode >= 300 {
		t.Fatalf("POST %s = %d %s", url, resp.StatusCode, raw)
	}
	return m
}

// leftovers lists what sandboxes of the cwm process pid left: its run
// directory, processes running the marker command, its cgroups.
func leftovers(home string, pid int, marker string) []string {
	var out []string
	ents, _ := os.ReadDir(filepath.Join(home, "run"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), fmt.Sprintf("p%d-", pid)) {
			out = append(out, "run directory "+e.Name())
		}
	}
	if b, _ := exec.Command("pgrep", "-f", marker).Output(); len(bytes.TrimSpace(b)) > 0 {
		out = append(out, "processes "+strings.Join(strings.Fields(string(b)), ","))
	}
	for _, root := range []string{"/sys/fs/cgroup/memory", "/sys/fs/cgroup/pids", "/sys/fs/cgroup"} {
		m, _ := filepath.Glob(filepath.Join(root, "*", fmt.Sprintf("cwm-%d-*", pid)))
		m2, _ := filepath.Glob(filepath.Join(root, fmt.Sprintf("cwm-%d-*", pid)))
		for _, d := range append(m, m2...) {
			out = append(out, "cgroup "+d)
		}
	}
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte(fmt.Sprintf("/run/p%d-", pid))) {
		out = append(out, "mounts")
	}
	return out
}

// TestServeKillAndDrain kills cwm serve with SIGKILL while its episodes
// run commands, starts it again and finds nothing of the dead one left;
// then stops the new one with SIGTERM during a step, which finishes, and
// the process exits 0 leaving nothing behind.
func TestServeKillAndDrain(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the example environment")
	}
	fx, err := sharedFixture()
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(t.TempDir(), "home")
	if out, err := exec.Command("cp", "-a", fx.home, home).CombinedOutput(); err != nil {
		t.Fatalf("copy the shared home: %v\n%s", err, out)
	}
	os.RemoveAll(filepath.Join(home, "run"))
	b, _ := os.ReadFile(fx.tasks)
	var tk struct {
		InstanceID string `json:"instance_id"`
	}
	json.Unmarshal(bytes.SplitN(b, []byte("\n"), 2)[0], &tk)

	const marker = "sleep 4242"
	cmd, url, out := startServe(t, home, fx.tasks)
	for i := 0; i < 3; i++ {
		ep := post(t, url+"/v1/episodes", map[string]any{"task_id": tk.InstanceID})
		post(t, url+"/v1/episodes/"+ep["episode_id"].(string)+"/step", map[string]any{"action": map[string]any{
			"text": "<tool: bash>\n(" + marker + " &) ; echo started\n</tool>"}})
	}
	if l := leftovers(home, cmd.Process.Pid, marker); len(l) == 0 {
		t.Fatalf("no sandbox state while serving: the check sees nothing")
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	dead := cmd.Process.Pid

	cmd, url, out = startServe(t, home, fx.tasks)
	if l := leftovers(home, dead, marker); len(l) > 0 {
		t.Errorf("after a restart, the killed server left: %v", l)
	}

	ep := post(t, url+"/v1/episodes", map[string]any{"task_id": tk.InstanceID})
	type reply struct {
		m   map[string]any
		err error
	}
	done := make(chan reply, 1)
	go func() {
		b, _ := json.Marshal(map[string]any{"action": map[string]any{"text": "<tool: bash>\nsleep 2; echo slept\n</tool>"}})
		resp, err := http.Post(url+"/v1/episodes/"+ep["episode_id"].(string)+"/step", "application/json", bytes.NewReader(b))
		if err != nil {
			done <- reply{err: err}
			return
		}
		defer resp.Body.Close()
		var m map[string]any
		err = json.NewDecoder(resp.Body).Decode(&m)
		done <- reply{m, err}
	}()
	// SIGTERM once the step runs (the episode lists as busy).
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(url + "/v1/episodes")
		if err != nil {
			continue
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if bytes.Contains(b, []byte(`"busy":true`)) {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGTERM)
	r := <-done
	if o, _ := r.m["observation"].(map[string]any); r.err != nil || o["output"] != "slept" {
		t.Errorf("the step in flight at SIGTERM: %v, %v; want its reply", r.m, r.err)
	}
	if err := cmd.Wait(); err != nil {
		t.Errorf("cwm serve after SIGTERM: %v, want exit 0\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "drained and stopped") {
		t.Errorf("no drain in the output:\n%s", out.String())
	}
	if l := leftovers(home, cmd.Process.Pid, "sleep 2; echo slept"); len(l) > 0 {
		t.Errorf("after a drain, the server left: %v", l)
	}
}
