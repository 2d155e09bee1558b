package envserver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"cwm/internal/env"
	"cwm/internal/task"
)

// OpenEnv's Task API over the server's tasks: one environment, its
// splits, their tasks by index; 404 another environment, 400 an unknown
// split or an index past the end, 422 a body its request model refuses;
// and nothing of it takes a slot.
func TestTaskAPI(t *testing.T) {
	f := newFixture(t, func(o *Options) {
		o.Splits = []Split{{Name: "train", IDs: []string{"calc-1"}}, {Name: "held-out", IDs: []string{"calc-1"}}}
	})
	task0 := map[string]any{"split": "train", "index": 0.0, "kind": "swe", "task_id": "calc-1", "env_id": "calc-env",
		"reset": map[string]any{"split": "train", "index": 0.0}}
	tests := []struct {
		method, path string
		body         any
		status       int
		want         any // the whole answer, or nil to check the status alone
	}{
		{"GET", "/list_environments", nil, 200, []any{"cwm-swe"}},
		{"GET", "/cwm-swe/splits", nil, 200, []any{map[string]any{"name": "train", "type": "train"}, map[string]any{"name": "held-out", "type": "validation"}}},
		{"GET", "/CWM-SWE/splits", nil, 200, nil},
		{"GET", "/chess/splits", nil, 404, nil},
		{"POST", "/cwm-swe/num_tasks", map[string]any{"split": "train"}, 200, map[string]any{"num_tasks": 1.0}},
		{"POST", "/cwm-swe/num_tasks", map[string]any{"split": "dev"}, 400, nil},
		{"POST", "/cwm-swe/num_tasks", map[string]any{}, 422, nil},
		{"POST", "/cwm-swe/num_tasks", map[string]any{"split": "train", "index": 0}, 422, nil},
		{"POST", "/cwm-swe/num_tasks", map[string]any{"split": 7}, 422, nil},
		{"POST", "/cwm-swe/num_tasks", "{", 400, nil},
		{"POST", "/chess/num_tasks", map[string]any{"split": "train"}, 404, nil},
		{"POST", "/cwm-swe/task", map[string]any{"split": "train", "index": 0}, 200, map[string]any{"task": task0}},
		{"POST", "/cwm-swe/task", map[string]any{"split": "train", "index": 1}, 400, nil},
		{"POST", "/cwm-swe/task", map[string]any{"split": "train", "index": -1}, 400, nil},
		{"POST", "/cwm-swe/task", map[string]any{"split": "train"}, 422, nil},
		{"POST", "/cwm-swe/tasks", map[string]any{"split": "train"}, 200, map[string]any{"tasks": []any{task0}, "env_name": "cwm-swe"}},
		{"POST", "/cwm-swe/task_range", map[string]any{"split": "train", "start": 0, "stop": 5}, 200, map[string]any{"tasks": []any{task0}}},
		{"POST", "/cwm-swe/task_range", map[string]any{"split": "train", "start": 1}, 200, map[string]any{"tasks": []any{}}},
		{"POST", "/cwm-swe/task_range", map[string]any{"split": "train", "start": -2}, 400, nil},
	}
	for _, tt := range tests {
		code, raw := f.doRaw(tt.method, tt.path, tt.body, "")
		if code != tt.status {
			t.Errorf("%s %s %v = %d %s, want %d", tt.method, tt.path, tt.body, code, raw, tt.status)
			continue
		}
		if tt.want != nil {
			if d := cmp.Diff(tt.want, raw); d != "" {
				t.Errorf("%s %s %v (-want +got):\n%s", tt.method, tt.path, tt.body, d)
			}
		} else if m, ok := raw.(map[string]any); code != 200 && (!ok || m["detail"] == nil) {
			t.Errorf("%s %s %v = %d %v: no detail", tt.method, tt.path, tt.body, code, raw)
		}
	}
	if n := f.slots(); n != 0 {
		t.Errorf("slots = %d after the Task API, want 0", n)
	}

	// A reset names a task by split and index, as a trainer that read
	// the Task API does.
	w := f.dial("")
	for _, data := range []map[string]any{
		{"split": "held-out", "index": 1},
		{"split": "dev", "index": 0},
		{"split": "train"},
		{"split": "train", "index": 0, "task_id": "calc-1"},
	} {
		if r := w.call(map[string]any{"type": "reset", "data": data}); errorCode(r) != CodeValidationError {
			t.Errorf("reset %v = %v, want VALIDATION_ERROR", data, r)
		}
	}
	r := w.call(map[string]any{"type": "reset", "data": map[string]any{"split": "held-out", "index": 0}})
	if st := w.call(`{"type": "state"}`); r["type"] != "observation" || st["data"].(map[string]any)["task_id"] != "calc-1" {
		t.Errorf("reset by split and index = %v, state %v; want task calc-1", r, st)
	}
	w.send(`{"type": "close"}`)
}

// A shell server has no tasks: the Task API answers 501 (OpenEnv's
// answer for an environment without the task methods), bar the list.
func TestTaskAPIShell(t *testing.T) {
	f := newFixture(t, func(o *Options) { o.Kind, o.EnvName = KindShell, "sandbox" })
	if code, raw := f.doRaw("GET", "/list_environments", nil, ""); code != 200 || !cmp.Equal(raw, []any{"sandbox"}) {
		t.Errorf("/list_environments = %d %v", code, raw)
	}
	for _, c := range []struct {
		method, path string
		body         any
	}{{"GET", "/sandbox/splits", nil}, {"POST", "/sandbox/num_tasks", map[string]any{"split": "all"}}} {
		if code, raw := f.doRaw(c.method, c.path, c.body, ""); code != 501 {
			t.Errorf("%s %s = %d %v, want 501", c.method, c.path, code, raw)
		}
	}
	if code, b, _ := f.do("GET", "/metadata", nil, ""); code != 200 || b["max_concurrent_envs"] != 64.0 || b["supports_concurrent_sessions"] != true {
		t.Errorf("/metadata = %d %v, want max_concurrent_envs 64", code, b)
	}
}

// Splits that name what the server does not serve, or twice, are
// refused at New.
func TestNewRefusesBadSplits(t *testing.T) {
	home := t.TempDir()
	_, tk := calcEnv(t, home)
	tests := []struct {
		name, kind string
		splits     []Split
		want       string
	}{
		{"an unknown task", "", []Split{{Name: "a", IDs: []string{"nope"}}}, `no task "nope"`},
		{"a name twice", "", []Split{{Name: "a"}, {Name: "a"}}, "named twice"},
		{"no name", "", []Split{{IDs: []string{"calc-1"}}}, "named twice"},
		{"a shell server", KindShell, []Split{{Name: "a"}}, "shell"},
	}
	for _, tt := range tests {
		o := Options{Sandboxes: env.NewSandboxes(nil), Store: env.NewStore(home), Tasks: []task.Task{*tk}, Kind: tt.kind, Splits: tt.splits}
		if _, err := New(o); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("New with %s = %v, want an error saying %q", tt.name, err, tt.want)
		}
	}
}
