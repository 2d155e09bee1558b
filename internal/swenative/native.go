package swenative

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/logparse"
	"cwm/internal/sandbox"
	"cwm/internal/task"
	"cwm/internal/taskimport"
)

// Reasons a native instance is kept out, beyond taskimport's.
const (
	ReasonNoClone   = "clone missing"
	ReasonNoSpec    = "no specification"
	ReasonNoPython  = "python unavailable"
	ReasonInstall   = "install failed"
	ReasonNoLogPars = "unknown parser"
)

// Options say how a dataset is built from source.
type Options struct {
	// Repos is the directory of clones (owner/name, owner+name, bare or
	// not, or with the clone in a repo subdirectory).
	Repos string
	// Python is the interpreter whose swebench gives the specifications.
	Python string
	// Build builds (or finds) a version group's environment: cwm's env
	// build, which the command line gives (stages do not import the
	// builder), online through the relay on the stored bases.
	Build func(ctx context.Context, b BuildSpec) (*env.Env, error)
	// Pythons are the bases' Python versions (X.Y), and RootFS the root
	// filesystem of the base of one (for its Debian packages).
	Pythons []string
	RootFS  func(python string) string
	// Envs start the grading runs' sandboxes; Store keeps each instance's
	// own environment (instance.go).
	Envs  *env.Sandboxes
	Store *env.Store
	// Egress is the relay's policy for each instance's install steps
	// (instance.go), PipWheel the pip they run (the build's).
	Egress   *egress.Policy
	PipWheel string
	// UploadedPriorTo bounds what those installs take (RFC 3339; "" for
	// the newest), as the build's --exclude-newer does.
	UploadedPriorTo string
	// Runs is how many times each instance is graded with the gold patch
	// and with the empty one (default 3).
	Runs int
	// Timeout bounds each test run.
	Timeout time.Duration
	// Progress, when set, is told of each instance as it is decided; Say
	// of each group as its environment is made.
	Progress func(id, class, reason string)
	Say      io.Writer
}

// BuildSpec is what Build makes: the clone at Rev with the translated
// recipe, on the base with Python.
type BuildSpec struct {
	Source, Rev, Name string
	Install           []string
	Test              string
	// RecipeFrom names the specification, for the environment's
	// provenance.
	RecipeFrom string
	Python     string
}

// Report is taskimport's validation report with the version groups.
type Report struct {
	*taskimport.Report
	Swebench string   `json:"swebench"`
	Groups   []*Group `json:"groups"`
}

// Group is one (repository, version): its environment and how it was
// made.
type Group struct {
	Repo    string `json:"repo"`
	Version string `json:"version"`
	// Instances are the ids of the group's instances, in the file's order.
	Instances []string `json:"instances"`
	Kept      int      `json:"kept"`
	// Python is the version the specification names; PythonUsed the
	// base's ("" when none could be).
	Python      string   `json:"python"`
	PythonUsed  string   `json:"python_used"`
	SetupCommit string   `json:"setup_commit"`
	Env         string   `json:"env,omitempty"`
	Install     []string `json:"install"`
	// Untranslated lists what of the specification could not be
	// translated, each with why; Missing the requirements the build could
	// not install.
	Untranslated []string `json:"untranslated,omitempty"`
	Missing      []string `json:"missing,omitempty"`
	// Reinstall are the steps run again at each instance's base_commit;
	// InstallSeconds what they took, per instance.
	Reinstall      []string           `json:"reinstall,omitempty"`
	InstallSeconds map[string]float64 `json:"install_seconds,omitempty"`
	// Failed says why the group has no environment.
	Failed  string  `json:"failed,omitempty"`
	Seconds float64 `json:"seconds"`
}

// Import builds the instances of the SWE-bench rows in path from source
// and validates them; it returns the tasks that hold and the report.
func Import(ctx context.Context, path string, o Options) ([]task.Task, *Report, error) {
	t0 := time.Now()
	if o.Runs <= 0 {
		o.Runs = 3
	}
	if o.Store == nil || o.Envs == nil || o.Build == nil {
		return nil, nil, fmt.Errorf("swenative.Import: Options need Build, Envs and Store")
	}
	insts, ir, err := taskimport.Instances(path, "swebench")
	if err != nil {
		return nil, nil, err
	}
	ir.Runs = o.Runs
	rep := &Report{Report: ir}
	leave := func(in taskimport.Instance, class, reason string) {
		rep.Leave(in.Row, in.Task.InstanceID, class, reason)
		if o.Progress != nil {
			o.Progress(in.Task.InstanceID, class, reason)
		}
	}
	clones := map[string]string{}
	var have []taskimport.Instance
	var tasks []task.Task
	for _, in := range insts {
		gd, ok := clones[in.Task.Repo]
		if !ok {
			gd = findClone(ctx, o.Repos, in.Task.Repo)
			clones[in.Task.Repo] = gd
		}
		if gd == "" {
			leave(in, ReasonNoClone, fmt.Sprintf("no clone of %s in %s (as %s or %s)", in.Task.Repo, o.Repos, in.Task.Repo, strings.Replace(in.Task.Repo, "/", "+", 1)))
			continue
		}
		have = append(have, in)
		tasks = append(tasks, in.Task)
	}
	for r, gd := range clones {
		if gd == "" {
			delete(clones, r)
		}
	}
	if len(have) == 0 {
		rep.Seconds = time.Since(t0).Seconds()
		return nil, rep, nil
	}
	sp, err := readSpecs(ctx, o.Python, tasks, clones)
	if err != nil {
		return nil, nil, err
	}
	rep.Swebench = sp.Swebench
	byGroup := map[string][]taskimport.Instance{}
	var order []string
	for _, in := range have {
		is := sp.Instances[in.Task.InstanceID]
		if is.Error != "" || is.Group == "" {
			leave(in, ReasonNoSpec, is.Error)
			continue
		}
		if _, ok := byGroup[is.Group]; !ok {
			order = append(order, is.Group)
		}
		byGroup[is.Group] = append(byGroup[is.Group], in)
	}
	var kept []task.Task
	for _, key := range order {
		g, ts, err := o.group(ctx, sp, key, byGroup[key], clones, leave)
		if err != nil {
			return nil, nil, err
		}
		rep.Groups = append(rep.Groups, g)
		kept = append(kept, ts...)
	}
	sort.SliceStable(rep.Left, func(i, j int) bool { return rep.Left[i].Row < rep.Left[j].Row })
	rep.Kept = len(kept)
	rep.Seconds = time.Since(t0).Seconds()
	return kept, rep, nil
}

// group builds one version group's environment and validates its
// instances on it.
func (o Options) group(ctx context.Context, sp *specs, key string, insts []taskimport.Instance, clones map[string]string, leave func(taskimport.Instance, string, string)) (*Group, []task.Task, error) {
	t0 := time.Now()
	s := sp.Groups[key]
	g := &Group{Repo: s.Repo, Version: s.Version, Python: s.Fields.Python, SetupCommit: s.SetupCommit}
	for _, in := range insts {
		g.Instances = append(g.Instances, in.Task.InstanceID)
	}
	defer func() { g.Seconds = time.Since(t0).Seconds() }()
	fail := func(class, why string) (*Group, []task.Task, error) {
		g.Failed = why
		for _, in := range insts {
			leave(in, class, why)
		}
		return g, nil, nil
	}
	if s.Error != "" {
		return fail(ReasonNoSpec, s.Error)
	}
	pys := o.Pythons
	var onIndex func(string) bool
	if o.Egress != nil && o.Egress.IndexURL != "" {
		probe := newIndexProbe(o.Egress.IndexURL)
		onIndex = func(name string) bool { return probe.has(ctx, name) }
	}
	r := translate(s, pys, func(py string) string {
		if o.RootFS == nil || py == "" {
			return ""
		}
		return o.RootFS(py)
	}, onIndex)
	g.PythonUsed, g.Install, g.Untranslated, g.Reinstall = r.Used, r.Install, r.Untranslated, r.Instance
	if r.Used == "" {
		return fail(ReasonNoPython, fmt.Sprintf("%s %s wants Python %s; the bases have %s and nothing newer", s.Repo, s.Version, r.Python, strings.Join(pys, ", ")))
	}
	first := sp.Instances[insts[0].Task.InstanceID]
	if o.Say != nil {
		fmt.Fprintf(o.Say, "group %s: Python %s (specified %s), %d instances\n", key, r.Used, r.Python, len(insts))
	}
	e, err := o.Build(ctx, BuildSpec{
		Source: clones[s.Repo], Rev: s.SetupCommit,
		Name:    "swe-" + strings.ReplaceAll(s.Repo, "/", "-") + "-" + s.Version,
		Install: r.Install, Test: testLine(r.TestPrefix, first.TestCmd), RecipeFrom: "swebench " + sp.Swebench + " " + key,
		Python: r.Used,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return fail(ReasonInstall, fmt.Sprintf("env build at %s: %v", short(s.SetupCommit), err))
	}
	g.Env = e.ID
	for _, m := range e.Missing {
		what := m.Requirement
		if what == "" {
			what = m.Import
		}
		g.Missing = append(g.Missing, what)
	}
	for _, st := range e.Install {
		if st.Status == "failed" {
			return fail(ReasonInstall, fmt.Sprintf("step %q: %s", st.Command, st.Note))
		}
	}
	var kept []task.Task
	for _, in := range insts {
		t := in.Task
		is := sp.Instances[t.InstanceID]
		parser := parserOf(is.Parser, sp.Swebench)
		if _, err := logparse.Get(parser); err != nil {
			leave(in, ReasonNoLogPars, fmt.Sprintf("swebench's parser %q: %v", is.Parser, err))
			continue
		}
		imp := t.Imported
		imp.Image, imp.Base, imp.Path = "", "", nil
		imp.Workdir = env.RepoRoot
		imp.LogParser = parser
		imp.TestCommand = testLine(r.TestPrefix, is.TestCmd)
		// An instance stored by an earlier import needs neither its
		// base_commit's objects nor its install again.
		var secs float64
		own := o.stored(e, t.InstanceID, t.BaseCommit, r.Instance)
		if own == nil {
			pack, err := basePack(ctx, clones[s.Repo], t.BaseCommit)
			if err != nil {
				leave(in, taskimport.ReasonPatch, err.Error())
				continue
			}
			var why string
			own, secs, why, err = o.install(ctx, e, clones[s.Repo], t.InstanceID, t.BaseCommit, pack, r.Instance)
			if err != nil {
				return nil, nil, fmt.Errorf("install %s at its base_commit: %w", t.InstanceID, err)
			}
			if why != "" {
				leave(in, ReasonInstall, why)
				continue
			}
		}
		if g.InstallSeconds == nil {
			g.InstallSeconds = map[string]float64{}
		}
		g.InstallSeconds[t.InstanceID] = secs
		t.EnvID = own.ID
		sbs := taskimport.Sandboxes{Open: func(ctx context.Context, _ *task.Task) (*sandbox.Sandbox, error) {
			return o.Envs.OpenWith(ctx, own, env.RunLimits{Timeout: o.Timeout})
		}}
		class, why, err := sbs.Validate(ctx, &t, o.Runs)
		if err != nil {
			return nil, nil, fmt.Errorf("validate %s: %w", t.InstanceID, err)
		}
		if class != "" {
			leave(in, class, g.explain(class, why))
			continue
		}
		if o.Progress != nil {
			o.Progress(t.InstanceID, "", "")
		}
		g.Kept++
		kept = append(kept, t)
	}
	return g, kept, nil
}

// explain adds to a failure what of the group may be its cause: a
// Python other than the specified one, requirements not installed.
func (g *Group) explain(class, why string) string {
	if class != taskimport.ReasonGoldFails && class != taskimport.ReasonNoTests {
		return why
	}
	if g.PythonUsed != g.Python {
		why += fmt.Sprintf(" (on Python %s, specified %s)", g.PythonUsed, g.Python)
	}
	if len(g.Missing) > 0 {
		why += fmt.Sprintf(" (not installed: %s)", strings.Join(g.Missing, ", "))
	}
	return why
}

// parserOf is the parser by whose ids an instance's labels are read:
// swebench's name, in its 4.x form (logparse.Swebench4) when the
// specifications are swebench 4's and that form differs from 5.0.2's,
// since the labels of the datasets of its time are its parsers' ids
// (parse_log_pytest_v2 cut a parametrised id at its first space).
func parserOf(name, swebench string) string {
	major, _, _ := strings.Cut(swebench, ".")
	if n, err := strconv.Atoi(major); err == nil && n < 5 {
		if _, err := logparse.Get(name + logparse.Swebench4); err == nil {
			return name + logparse.Swebench4
		}
	}
	return name
}

// testLine is the harness's eval_commands, then the test command.
func testLine(prefix []string, cmd string) string {
	return strings.Join(append(append([]string{}, prefix...), cmd), "\n")
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}

// opener starts a task's grading sandboxes on e, with base's objects
// (pack) added to the repository when its history does not reach it.
func (o Options) opener(e *env.Env, base string, pack []byte) func(context.Context, *task.Task) (*sandbox.Sandbox, error) {
	return func(ctx context.Context, t *task.Task) (*sandbox.Sandbox, error) {
		sb, err := o.Envs.OpenWith(ctx, e, env.RunLimits{Timeout: o.Timeout})
		if err != nil {
			return nil, err
		}
		if err := addObjects(ctx, sb, base, pack); err != nil {
			sb.Close()
			return nil, fmt.Errorf("%s: %w", t.InstanceID, err)
		}
		return sb, nil
	}
}
