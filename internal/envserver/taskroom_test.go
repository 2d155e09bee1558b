package envserver

import (
	"fmt"
	"io/fs"
	"strings"
	"sync/atomic"
	"testing"
)

// machine is a fake /proc and /sys: path to contents.
type machine map[string]string

func (m machine) read(path string) ([]byte, error) {
	if s, ok := m[path]; ok {
		return []byte(s), nil
	}
	return nil, fs.ErrNotExist
}

func TestTaskRoom(t *testing.T) {
	base := func(tasks int) machine {
		return machine{
			"/proc/loadavg":                fmt.Sprintf("3.10 2.90 2.50 4/%d 99999\n", tasks),
			"/proc/sys/kernel/pid_max":     "32768\n",
			"/proc/sys/kernel/threads-max": "192735\n",
			"/proc/self/cgroup":            "8:pids:/\n0::/\n",
			"/sys/fs/cgroup/pids/pids.max": "max\n",
			"/proc/self/status":            "Name:\tcwm\nThreads:\t40\n",
		}
	}
	with := func(m machine, k, v string) machine { m[k] = v; return m }
	tests := []struct {
		name     string
		m        machine
		starting int
		want     string // a part of the refusal; "" for room
	}{
		{"room", base(10000), 0, ""},
		{"at the reserve's edge", base(32768 - taskReserve), 0, ""},
		{"within the reserve of pid_max", base(32768 - taskReserve + 1), 0, "32257 of the machine's tasks: kernel.pid_max 32768 in use"},
		{"starting episodes on their way", base(32768 - taskReserve - 5*tasksPerEpisode), 5, ""},
		{"one more starting", base(32768 - taskReserve - 5*tasksPerEpisode), 6, "within 572 of it: 512 spare, 10 for each of 6 episodes starting"},
		{"threads-max lower", with(base(20000), "/proc/sys/kernel/threads-max", "20100\n"), 0, "kernel.threads-max 20100"},
		{"v1 pids cgroup", with(with(with(base(100), "/proc/self/cgroup", "8:pids:/serve\n0::/\n"),
			"/sys/fs/cgroup/pids/serve/pids.max", "1000\n"), "/sys/fs/cgroup/pids/serve/pids.current", "600\n"), 0,
			"600 of the server's pids cgroup: pids.max 1000"},
		{"v2 pids cgroup", with(with(with(base(100), "/proc/self/cgroup", "0::/user.slice/a.scope\n"),
			"/sys/fs/cgroup/user.slice/a.scope/pids.max", "700\n"), "/sys/fs/cgroup/user.slice/a.scope/pids.current", "300\n"), 0,
			"pids.max 700"},
		{"cgroup without a limit", with(with(base(100), "/proc/self/cgroup", "8:pids:/serve\n"),
			"/sys/fs/cgroup/pids/serve/pids.max", "max\n"), 0, ""},
		{"Go's thread cap", with(base(12000), "/proc/self/status", "Threads:\t9700\n"), 0, "9700 of the server's own threads: Go's limit 10000"},
		{"nothing readable", machine{}, 0, ""},
		{"torn loadavg", with(base(0), "/proc/loadavg", "3.10 2.90\n"), 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := taskRoom(tc.m.read, tc.starting)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("taskRoom = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestCapacityMachine: a machine within reach of pid_max refuses a new
// episode as CAPACITY_REACHED naming the limit (REST and /ws), counts it
// in /metrics, keeps the open episode working, and takes new episodes
// once the machine has room again.
func TestCapacityMachine(t *testing.T) {
	f := newFixture(t, nil)
	var used atomic.Int64
	used.Store(1000)
	f.srv.mu.Lock()
	f.srv.readSys = func(path string) ([]byte, error) {
		switch path {
		case "/proc/loadavg":
			return []byte(fmt.Sprintf("1.0 1.0 1.0 2/%d 1234\n", used.Load())), nil
		case "/proc/sys/kernel/pid_max":
			return []byte("32768\n"), nil
		}
		return nil, fs.ErrNotExist
	}
	f.srv.mu.Unlock()
	create := func() (int, map[string]any) {
		code, b, _ := f.do("POST", "/v1/episodes", map[string]any{"kind": "shell", "env": "calc-env"}, "")
		return code, b
	}
	code, open := create()
	if code != 201 {
		t.Fatalf("create = %d %v", code, open)
	}
	used.Store(32500)
	code, b := create()
	msg, _ := b["detail"].(string)
	if code != 503 || b["code"] != CodeCapacityReached || !strings.Contains(msg, "32500 of the machine's tasks: kernel.pid_max 32768 in use") {
		t.Errorf("create near pid_max = %d %v", code, b)
	}
	w, err := f.tryDial("", nil)
	if err != nil {
		t.Fatal(err)
	}
	if r := w.recv(); errorCode(r) != CodeCapacityReached || !strings.Contains(fmt.Sprint(r["data"].(map[string]any)["machine_limit"]), "kernel.pid_max") {
		t.Errorf("/ws near pid_max = %v", r)
	}
	if got := f.metric("cwm_serve_machine_refusals_total"); got != "2" {
		t.Errorf("cwm_serve_machine_refusals_total = %s, want 2", got)
	}
	id := open["episode_id"].(string)
	if code, b, _ := f.do("POST", "/v1/episodes/"+id+"/step", map[string]any{"action": map[string]any{"text": "<tool: bash>\necho still\n</tool>"}}, ""); code != 200 || !strings.Contains(fmt.Sprint(b), "still") {
		t.Errorf("a step of the open episode near pid_max = %d %v", code, b)
	}
	used.Store(2000)
	if code, b := create(); code != 201 {
		t.Errorf("create with room again = %d %v", code, b)
	}
}

func TestFDRoom(t *testing.T) {
	tests := []struct {
		name                   string
		limit, slots, starting int
		open                   int // -1: must not be counted
		want                   string
	}{
		{"far from the limit: not counted", 20000, 100, 0, -1, ""},
		{"no limit read", 0, 5000, 0, -1, ""},
		{"near by the estimate, room by the count", 20000, 1600, 0, 9000, ""},
		{"within the reserve", 20000, 3900, 0, 19800, "19800 of the server's open files: RLIMIT_NOFILE 20000 in use"},
		{"starting episodes on their way", 20000, 3900, 10, 19700, "within 316 of it: 256 spare, 6 for each of 10 episodes starting"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := fdRoom(tc.limit, tc.slots, tc.starting, func() int {
				if tc.open < 0 {
					t.Errorf("the descriptors were counted with %d slots of %d", tc.slots, tc.limit)
				}
				return tc.open
			})
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("fdRoom = %q, want %q", got, tc.want)
			}
		})
	}
}
