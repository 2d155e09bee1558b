package taskimport

import (
	"context"
	"errors"
	"fmt"

	"cwm/internal/task"
)

// Instance is a row that became a task, and where it is in its file.
type Instance struct {
	Row  int
	Task task.Task
}

// Instances reads the rows of path as format's tasks, as Import does,
// without pulling images or validating: for imports that make the
// environment themselves (cwm tasks import --native). The rows that are
// not tasks and the duplicates are left out in the report it returns.
func Instances(path, format string) ([]Instance, *Report, error) {
	if !known(format) {
		return nil, nil, fmt.Errorf("unknown format %q", format)
	}
	rows, err := readRows(path)
	if err != nil {
		return nil, nil, err
	}
	rep := newReport(Options{Format: format}, path, len(rows))
	seen := map[string]int{}
	var out []Instance
	for _, r := range rows {
		if r.bad != "" {
			rep.Leave(r.n, "", ReasonBadRow, r.bad)
			continue
		}
		t, err := instance(format, r)
		var re *rowError
		if errors.As(err, &re) {
			rep.Leave(r.n, t.InstanceID, ReasonBadRow, re.msg)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if prev, ok := seen[t.InstanceID]; ok {
			rep.Leave(r.n, t.InstanceID, ReasonDuplicate, fmt.Sprintf("instance_id %q already on row %d", t.InstanceID, prev))
			continue
		}
		seen[t.InstanceID] = r.n
		out = append(out, Instance{Row: r.n, Task: t})
	}
	return out, rep, nil
}

// Leave records a row or task kept out.
func (r *Report) Leave(row int, id, class, reason string) {
	r.Left = append(r.Left, Left{Row: row, InstanceID: id, Class: class, Reason: reason})
	r.Reasons[class]++
}

// Validate grades t as Import does (runs times with the gold patch and
// with the empty one) and returns the class and reason it is kept out
// ("" when it holds).
func (s Sandboxes) Validate(ctx context.Context, t *task.Task, runs int) (class, reason string, err error) {
	return s.validate(ctx, t, runs)
}
