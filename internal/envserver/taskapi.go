package envserver

import (
	"fmt"
	"net/http"
	"strings"
)

// Split is a named, ordered list of the tasks (swe) or traces (trace) a
// server serves: a split of OpenEnv's Task API, whose tasks are named by
// their index in it.
type Split struct {
	Name string
	IDs  []string
}

// taskAPIError is an answer of the Task API other than 200, in FastAPI's
// {"detail": ...} as OpenEnv's server gives it: 404 an unknown
// environment, 400 an unknown split or an index past the end, 501 a kind
// without tasks.
type taskAPIError struct {
	status int
	msg    string
}

func (e *taskAPIError) Error() string { return e.msg }

// setSplits checks the splits of opts (or makes the one split "all" of
// every task or trace, in order) for the Task API and resets by split.
func (s *Server) setSplits() error {
	kind := s.opts.Kind
	if kind == KindShell {
		if len(s.opts.Splits) > 0 {
			return fmt.Errorf("splits: a shell server has no tasks to split")
		}
		return nil
	}
	if len(s.opts.Splits) == 0 {
		all := Split{Name: "all"}
		if kind == KindSWE {
			for _, t := range s.opts.Tasks {
				all.IDs = append(all.IDs, t.InstanceID)
			}
		} else {
			for _, r := range s.opts.Traces {
				all.IDs = append(all.IDs, r.ID)
			}
		}
		s.opts.Splits = []Split{all}
	}
	seen := map[string]bool{}
	for _, sp := range s.opts.Splits {
		if sp.Name == "" || seen[sp.Name] {
			return fmt.Errorf("splits: split %q is empty or named twice", sp.Name)
		}
		seen[sp.Name] = true
		for _, id := range sp.IDs {
			if (kind == KindSWE && s.tasks[id] == nil) || (kind == KindTrace && s.traces[id] == nil) {
				return fmt.Errorf("split %s: no %s %q among those served", sp.Name, map[string]string{KindSWE: "task", KindTrace: "trace"}[kind], id)
			}
		}
	}
	return nil
}

// errNoTasks is the Task API on a shell server: OpenEnv's answer to an
// environment without the task methods.
var errNoTasks = &taskAPIError{http.StatusNotImplemented, "the Task API is not supported for this environment: a shell server has no tasks"}

// split finds a split by name.
func (s *Server) split(name string) (*Split, error) {
	if s.opts.Kind == KindShell {
		return nil, errNoTasks
	}
	names := make([]string, len(s.opts.Splits))
	for i := range s.opts.Splits {
		if s.opts.Splits[i].Name == name {
			return &s.opts.Splits[i], nil
		}
		names[i] = s.opts.Splits[i].Name
	}
	return nil, &taskAPIError{http.StatusBadRequest, fmt.Sprintf("unknown split %q (splits: %s)", name, strings.Join(names, ", "))}
}

// splitID is the id of a split's task at index.
func (s *Server) splitID(name string, index int) (string, error) {
	sp, err := s.split(name)
	if err != nil {
		return "", err
	}
	if index < 0 || index >= len(sp.IDs) {
		return "", &taskAPIError{http.StatusBadRequest, fmt.Sprintf("Invalid task index: %d of split %s, which has %d tasks", index, name, len(sp.IDs))}
	}
	return sp.IDs[index], nil
}

// taskOf is the Task API's task: what names it, and the reset that
// starts it.
func (s *Server) taskOf(sp *Split, i int) map[string]any {
	id := sp.IDs[i]
	t := map[string]any{"split": sp.Name, "index": i, "kind": s.opts.Kind,
		"reset": map[string]any{"split": sp.Name, "index": i}}
	if s.opts.Kind == KindSWE {
		t["task_id"], t["env_id"] = id, s.tasks[id].EnvID
	} else {
		t["trace_id"] = id
	}
	return t
}

// splitType is OpenEnv's type of a split named by a string.
func splitType(name string) string {
	switch name {
	case "train", "validation", "test":
		return name
	}
	return "validation"
}

// taskRequest is the body of the Task API's POST routes (OpenEnv's
// ListTasksRequest, NumTasksRequest, GetTaskRequest, GetTaskRangeRequest).
type taskRequest struct {
	Split *string `json:"split"`
	Index *int    `json:"index"`
	Start *int    `json:"start"`
	Stop  *int    `json:"stop"`
}

// taskRoute wraps a Task API route: the environment's name checked (as
// OpenEnv does, case aside), the body decoded with the fields the route
// takes, the answer or the error written.
func (s *Server) taskRoute(fields []string, h func(*taskRequest) (any, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		answer, err := func() (any, error) {
			if env := r.PathValue("env"); !strings.EqualFold(env, s.opts.EnvName) {
				return nil, &taskAPIError{http.StatusNotFound, fmt.Sprintf("unknown environment %q (this server's: %s)", env, s.opts.EnvName)}
			}
			var req taskRequest
			if r.Method == http.MethodPost {
				b, err := s.readBody(w, r)
				if err != nil {
					return nil, err
				}
				if err := decodeObject(b, &req); err != nil {
					return nil, err
				}
				if err := onlyTaskFields(req, fields); err != nil {
					return nil, err
				}
			}
			return h(&req)
		}()
		var te *taskAPIError
		switch {
		case err == nil:
			writeJSON(w, http.StatusOK, answer)
		case asTaskAPIError(err, &te):
			writeJSON(w, te.status, map[string]any{"detail": te.msg})
		default:
			s.writeError(w, err)
		}
	}
}

func asTaskAPIError(err error, te **taskAPIError) bool {
	t, ok := err.(*taskAPIError)
	*te = t
	return ok
}

// onlyTaskFields refuses fields the route's request model lacks, and
// requires split (and index where it is a field), as pydantic would.
func onlyTaskFields(req taskRequest, fields []string) error {
	given := map[string]bool{"split": req.Split != nil, "index": req.Index != nil, "start": req.Start != nil, "stop": req.Stop != nil}
	for _, f := range []string{"split", "index", "start", "stop"} {
		if given[f] && !contains(fields, f) {
			return invalid("extra_forbidden", "Extra inputs are not permitted", "body", f)
		}
	}
	if req.Split == nil {
		return invalid("missing", "Field required", "body", "split")
	}
	if contains(fields, "index") && req.Index == nil {
		return invalid("missing", "Field required", "body", "index")
	}
	return nil
}

// taskAPI registers OpenEnv's Task API on mux.
func (s *Server) taskAPI(mux *http.ServeMux) {
	mux.HandleFunc("GET /list_environments", s.auth(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, []string{s.opts.EnvName})
	}))
	mux.HandleFunc("GET /{env}/splits", s.auth(s.taskRoute(nil, func(*taskRequest) (any, error) {
		if s.opts.Kind == KindShell {
			return nil, errNoTasks
		}
		out := []map[string]any{}
		for _, sp := range s.opts.Splits {
			out = append(out, map[string]any{"name": sp.Name, "type": splitType(sp.Name)})
		}
		return out, nil
	})))
	mux.HandleFunc("POST /{env}/tasks", s.auth(s.taskRoute([]string{"split"}, func(req *taskRequest) (any, error) {
		sp, err := s.split(*req.Split)
		if err != nil {
			return nil, err
		}
		tasks := make([]map[string]any, len(sp.IDs))
		for i := range sp.IDs {
			tasks[i] = s.taskOf(sp, i)
		}
		return map[string]any{"tasks": tasks, "env_name": s.opts.EnvName}, nil
	})))
	mux.HandleFunc("POST /{env}/num_tasks", s.auth(s.taskRoute([]string{"split"}, func(req *taskRequest) (any, error) {
		sp, err := s.split(*req.Split)
		if err != nil {
			return nil, err
		}
		return map[string]any{"num_tasks": len(sp.IDs)}, nil
	})))
	mux.HandleFunc("POST /{env}/task", s.auth(s.taskRoute([]string{"split", "index"}, func(req *taskRequest) (any, error) {
		if _, err := s.splitID(*req.Split, *req.Index); err != nil {
			return nil, err
		}
		sp, _ := s.split(*req.Split)
		return map[string]any{"task": s.taskOf(sp, *req.Index)}, nil
	})))
	mux.HandleFunc("POST /{env}/task_range", s.auth(s.taskRoute([]string{"split", "start", "stop"}, func(req *taskRequest) (any, error) {
		sp, err := s.split(*req.Split)
		if err != nil {
			return nil, err
		}
		start, stop := 0, len(sp.IDs)
		if req.Start != nil {
			start = *req.Start
		}
		if req.Stop != nil {
			stop = min(*req.Stop, len(sp.IDs))
		}
		if start < 0 || stop < 0 {
			return nil, &taskAPIError{http.StatusBadRequest, "Invalid task index: start and stop are at least 0"}
		}
		tasks := []map[string]any{}
		for i := start; i < stop; i++ {
			tasks = append(tasks, s.taskOf(sp, i))
		}
		return map[string]any{"tasks": tasks}, nil
	})))
}
