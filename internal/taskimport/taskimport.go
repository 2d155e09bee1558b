package taskimport

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"cwm/internal/basebuild"
	"cwm/internal/egress"
	"cwm/internal/errkind"
	"cwm/internal/task"
)

// Options say how a dataset is imported.
type Options struct {
	// Format is the dataset's (one of Formats).
	Format string
	// Mirror, when set, is the registry host images are pulled from in
	// place of the one their names give (a pull-through cache, a private
	// copy): "mirror.example:5000" makes swebench/sweb.eval... pulled as
	// mirror.example:5000/swebench/sweb.eval...
	Mirror string
	// Sandboxes grade the tasks; its Store is where images become bases.
	Sandboxes Sandboxes
	// Base is how images are imported (its Runtime finds their Python).
	Base basebuild.Options
	// Egress, when set, lets a Dockerfile's RUN steps (Harbor tasks)
	// reach the network through cwm's relay, as env build's install
	// steps do; nil keeps them offline.
	Egress *egress.Policy
	// Runs is how many times each task is graded with the gold patch and
	// with the empty one (default 3).
	Runs int
	// Progress, when set, is told of each task as it is decided.
	Progress func(id, class, reason string)
}

// Report is the validation report: what was read, what was kept, and why
// the rest was left out.
type Report struct {
	Format string `json:"format"`
	File   string `json:"file"`
	Rows   int    `json:"rows"`
	Kept   int    `json:"kept"`
	// Left are the rows and tasks kept out, in the file's order.
	Left []Left `json:"left"`
	// Reasons counts Left by class.
	Reasons map[string]int `json:"reasons"`
	// Images maps each image pulled to the digest of the base it became.
	Images  map[string]string `json:"images"`
	Runs    int               `json:"runs"`
	Seconds float64           `json:"seconds"`
}

// Left is a row or a task kept out.
type Left struct {
	Row        int    `json:"row"`
	InstanceID string `json:"instance_id,omitempty"`
	Class      string `json:"class"`
	Reason     string `json:"reason"`
}

// Summary is the report's one line.
func (r *Report) Summary() string {
	var parts []string
	for _, c := range sortedCounts(r.Reasons) {
		parts = append(parts, fmt.Sprintf("%d %s", r.Reasons[c], c))
	}
	s := fmt.Sprintf("%s: %d rows, %d tasks kept, %d left out", r.File, r.Rows, r.Kept, len(r.Left))
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s
}

func sortedCounts(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Import reads the rows of path as o.Format publishes them, stores each
// image the rows name as a base, and validates every instance; it returns
// the tasks that hold and the report. A row or a task that does not hold
// is in the report, not an error: errors are for the file as a whole
// (missing, not rows at all) and for the machine (a sandbox that does not
// start).
func Import(ctx context.Context, path string, o Options) ([]task.Task, *Report, error) {
	t0 := time.Now()
	if !known(o.Format) {
		return nil, nil, errkind.Errorf(errkind.Usage, "unknown format %q (known: %s)", o.Format, strings.Join(Formats, ", "))
	}
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Format == "harbor" {
		return importHarbor(ctx, path, o, t0)
	}
	rows, err := readRows(path)
	if err != nil {
		return nil, nil, err
	}
	rep := newReport(o, path, len(rows))
	leave := func(r row, id, class, reason string) { rep.leave(o, r.n, id, class, reason) }
	seen := map[string]int{}
	var kept []task.Task
	pulled := map[string]error{}
	for _, r := range rows {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if r.bad != "" {
			leave(r, "", ReasonBadRow, r.bad)
			continue
		}
		t, err := instance(o.Format, r)
		var re *rowError
		if errors.As(err, &re) {
			leave(r, t.InstanceID, ReasonBadRow, re.msg)
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		if prev, ok := seen[t.InstanceID]; ok {
			leave(r, t.InstanceID, ReasonDuplicate, fmt.Sprintf("instance_id %q already on row %d", t.InstanceID, prev))
			continue
		}
		seen[t.InstanceID] = r.n
		ref, err := mirrored(t.Imported.Image, o.Mirror)
		if err != nil {
			leave(r, t.InstanceID, ReasonBadRow, err.Error())
			continue
		}
		t.Imported.Image = ref
		if _, done := pulled[ref]; !done {
			b, err := basebuild.Import(ctx, o.Sandboxes.Store, ref, o.Base)
			if err == nil {
				rep.Images[ref] = b.Digest
			}
			pulled[ref] = err
		}
		if err := pulled[ref]; err != nil {
			if ctx.Err() != nil {
				return nil, nil, ctx.Err()
			}
			leave(r, t.InstanceID, ReasonImageMissing, fmt.Sprintf("%s: %v", ref, err))
			continue
		}
		t.Imported.Base = rep.Images[ref]
		if err := o.Sandboxes.record(ctx, &t); err != nil {
			return nil, nil, fmt.Errorf("import %s: %w", t.InstanceID, err)
		}
		class, why, err := o.Sandboxes.validate(ctx, &t, o.Runs)
		if err != nil {
			return nil, nil, fmt.Errorf("validate %s: %w", t.InstanceID, err)
		}
		if class == "" {
			if err := o.Sandboxes.keep(&t); err != nil {
				return nil, nil, err
			}
		}
		kept = rep.decided(o, r.n, t, class, why, kept)
	}
	return rep.done(kept, t0)
}

func newReport(o Options, path string, rows int) *Report {
	return &Report{Format: o.Format, File: path, Rows: rows, Reasons: map[string]int{}, Images: map[string]string{}, Runs: o.Runs}
}

// leave records row n (task id) as kept out, and tells o.Progress.
func (r *Report) leave(o Options, n int, id, class, reason string) {
	r.Leave(n, id, class, reason)
	if o.Progress != nil {
		o.Progress(id, class, reason)
	}
}

// decided records the verdict on the task t of row n: kept (added to
// kept, which it returns) or, with a class, left out with its reason.
func (r *Report) decided(o Options, n int, t task.Task, class, why string, kept []task.Task) []task.Task {
	if class != "" {
		r.leave(o, n, t.InstanceID, class, why)
		return kept
	}
	if o.Progress != nil {
		o.Progress(t.InstanceID, "", "")
	}
	return append(kept, t)
}

// done closes the report on the tasks kept.
func (r *Report) done(kept []task.Task, t0 time.Time) ([]task.Task, *Report, error) {
	r.Kept = len(kept)
	r.Seconds = time.Since(t0).Seconds()
	return kept, r, nil
}

func known(format string) bool {
	for _, f := range Formats {
		if f == format {
			return true
		}
	}
	return false
}

// mirrored is ref pulled from mirror instead of its own registry: the
// same repository path and tag or digest under the mirror's host.
func mirrored(ref, mirror string) (string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return "", fmt.Errorf("image %q is not a reference: %v", ref, err)
	}
	if mirror == "" {
		return ref, nil
	}
	repo := mirror + "/" + r.Context().RepositoryStr()
	if d, ok := r.(name.Digest); ok {
		return repo + "@" + d.DigestStr(), nil
	}
	return repo + ":" + r.Identifier(), nil
}

// MarshalReport is the report as written to its file.
func MarshalReport(r *Report) ([]byte, error) {
	if r.Left == nil {
		r.Left = []Left{}
	}
	b, err := json.MarshalIndent(r, "", "  ")
	return append(b, '\n'), err
}
