package swenative

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"cwm/internal/egress"
	"cwm/internal/env"
	"cwm/internal/hostexec"
	"cwm/internal/lazyre"
	"cwm/internal/sandbox"
	"cwm/internal/task"
)

// The harness builds an instance's image on its version's environment
// image: the repository reset to the instance's base_commit, then the
// specification's pre_install and install run there, with the network.
// A version's environment here is built once, at its setup commit, so a
// base_commit whose project needs what the setup commit's did not (a new
// dependency, an entry point its code has and the setup commit's lacks)
// would be graded on the wrong install. Each instance therefore gets the
// same steps again in a sandbox of its own over the group's environment,
// through the egress relay as install steps have it; what they wrote is
// then stored as the instance's own environment (env.Derive: the group's
// layer with the sandbox's upper laid over it), which its task names, so
// that its gradings here and every later stage (forage, serve, grade)
// open the instance as the harness's image has it, offline. A second
// import finds it stored and runs nothing.

// instanceTimeout bounds one instance's install steps.
const instanceTimeout = 20 * time.Minute

// Where an instance's sandbox holds pip while its steps run (the venv has
// no pip of its own) and the host's certificate bundle, both removed
// before the sandbox is stored.
const (
	instancePipWheel = "/tmp/cwm-pip.whl"
	instancePipDir   = "/tmp/cwm-pip"
	instanceCA       = "/tmp/cwm-ca-bundle.pem"
)

// instancePrelude makes pip (pip, pip3, python -m pip) in a step the
// staged wheel's, run by the venv's Python, as the build's bash steps
// have it.
const instancePrelude = `set -o pipefail
pip() { PYTHONPATH=` + instancePipDir + ` ` + env.VenvRoot + `/bin/python -m pip "$@"; }; pip3() { pip "$@"; }
_cwm_python() { local py=$1; shift; if [ "$1" = -m ] && { [ "$2" = pip ] || [ "$2" = pip3 ]; }; then shift 2; pip "$@"; else command "$py" "$@"; fi; }
python() { _cwm_python python "$@"; }; python3() { _cwm_python python3 "$@"; }
`

// instanceCheckout puts the repository at base_commit (its objects are
// there: addObjects), unpacks pip, and gives the base interpreter the
// venv's packages.
//
// The last is for what runs the venv's Python through a link of its own:
// the harness's interpreter is a conda environment's, a prefix of its
// own, so a link to it (tox-current-env's .tox/py39/bin/python, which
// sphinx's "python -X dev -m pytest" runs from 3.4 on) runs with the
// environment's packages; a link to a venv's interpreter finds no
// pyvenv.cfg beside it and runs as the bare base interpreter ("No module
// named pytest"). A .pth in the base interpreter's user site directory
// (the base's own are read-only) adds the venv's (its .pth files too, the
// editable installs'); the venv's interpreter does not read it, as a venv
// leaves the user site out.
const instanceCheckout = `set -e
cd "$1"
git checkout -q -f "$2"
` + shallowBase + `
` + env.VenvRoot + `/bin/python -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' "$3" "$4"
home=$(sed -n 's/^home *= *//p' ` + env.VenvRoot + `/pyvenv.cfg)
venvsite=$(` + env.VenvRoot + `/bin/python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
basesite=$("$home/python3" -c 'import site; print(site.getusersitepackages())')
mkdir -p "$basesite"
echo "import site; site.addsitedir('$venvsite')" >"$basesite/cwm-venv.pth"
`

// shallowBase makes base_commit ($2) a shallow boundary of the
// repository when a parent of it is missing (the objects added are the
// commit and its tree, not its history): git then reads it as the end of
// the history instead of failing on the parent ("Could not read ...":
// an episode's git log, squash and repack stopped there).
const shallowBase = `gitdir=$(git rev-parse --git-dir)
for p in $(git cat-file -p "$2^{commit}" | sed -n 's/^parent //p'); do
	if ! git cat-file -e "$p^{commit}" 2>/dev/null; then git rev-parse "$2^{commit}" >>"$gitdir/shallow"; break; fi
done`

// hideEdits marks the tracked files the steps edited (sphinx's
// pre_install pins its requirements with sed in setup.py and tox.ini)
// skip-worktree: they stay edited, as the harness's image has them, but
// git diff and git status no longer show them, so an agent's diff, and
// the patch it submits, hold its own changes only (graded on a tree that
// has the edits already, a patch that repeats them does not apply).
const hideEdits = `set -e
cd "$1"
git diff --name-only -z | xargs -0 -r git update-index --skip-worktree --`

// editable is an install line with pip's install of the project (".",
// ".[test]") made editable, as the build's is: the repository at each
// base_commit is then the code the tests import.
func editable(line string) string {
	w := strings.Fields(line)
	pip := slices.Index(w, "pip")
	if pip < 0 || pip+1 >= len(w) || w[pip+1] != "install" {
		return line
	}
	for i := pip + 2; i < len(w); i++ {
		if w[i] == "-e" || w[i] == "--editable" {
			return line
		}
		if w[i] == "." || strings.HasPrefix(w[i], ".[") {
			return strings.Join(slices.Insert(w, i, "-e"), " ")
		}
	}
	return line
}

// instanceKey names an instance's install among its group
// environment's derivations: the same instance, base_commit, steps and
// index bound make the same environment.
func (o Options) instanceKey(id, base string, steps []string) string {
	return strings.Join(append([]string{"v3", id, base, o.UploadedPriorTo}, steps...), "\n")
}

// stored is the instance id's environment when an earlier import stored
// it (the same group environment, base, steps and index bound), else nil.
func (o Options) stored(e *env.Env, id, base string, steps []string) *env.Env {
	if d := o.Store.Get(env.DerivedID(e, o.instanceKey(id, base, steps))); d != nil && d.Usable {
		return d
	}
	return nil
}

// install gives the instance id its own environment: a sandbox of the
// group's environment e at base (pack holds its objects) runs steps, and
// what they wrote is derived from e and stored. The seconds are what the
// steps and the storing took. A step that fails is a reason (the step,
// pip's last lines, the relay's refusals), not an error.
func (o Options) install(ctx context.Context, e *env.Env, clone, id, base string, pack []byte, steps []string) (*env.Env, float64, string, error) {
	key := o.instanceKey(id, base, steps)
	t0 := time.Now()
	sb, err := o.opener(e, base, pack)(ctx, &task.Task{InstanceID: id})
	if err != nil {
		return nil, 0, "", err
	}
	defer sb.Close()
	whl, err := os.ReadFile(o.PipWheel)
	if err != nil {
		return nil, 0, "", fmt.Errorf("read the pip wheel: %w", err)
	}
	if err := sb.WriteFile(ctx, instancePipWheel, whl, 0o644); err != nil {
		return nil, 0, "", fmt.Errorf("stage pip: %w", err)
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", instanceCheckout, "checkout", env.RepoRoot, base, instancePipWheel, instancePipDir}, Capture: 1 << 20})
	if err != nil {
		return nil, 0, "", fmt.Errorf("check out base_commit %s: %w", short(base), err)
	}
	if !res.Success() {
		return nil, 0, fmt.Sprintf("check out base_commit %s: %s: %s", short(base), res.Describe(), lastLines(res.Stderr)), nil
	}
	vars, err := o.caVars(ctx, sb)
	if err != nil {
		return nil, 0, "", err
	}
	if v := scmVersion(ctx, clone, base); v != "" {
		vars = append(vars, "SETUPTOOLS_SCM_PRETEND_VERSION="+v)
	}
	for _, step := range steps {
		why, err := o.runStep(ctx, sb, step, vars)
		if err != nil || why != "" {
			return nil, 0, why, err
		}
	}
	if res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"rm", "-rf", instancePipWheel, instancePipDir, instanceCA}}); err != nil || !res.Success() {
		return nil, 0, "", fmt.Errorf("remove the staged pip: %v %s", err, res.Describe())
	}
	if res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", hideEdits, "hide", env.RepoRoot}, Capture: 1 << 20}); err != nil || !res.Success() {
		return nil, 0, "", fmt.Errorf("hide the install's edits from git: %v %s %s", err, res.Describe(), res.Stderr)
	}
	d, err := o.store(ctx, sb, e, clone, id, base, key, steps)
	if err != nil {
		return nil, 0, "", fmt.Errorf("store %s's install at base_commit %s: %w", id, short(base), err)
	}
	return d, time.Since(t0).Seconds(), "", nil
}

// store derives the instance's environment from e with what sb wrote.
func (o Options) store(ctx context.Context, sb *sandbox.Sandbox, e *env.Env, clone, id, base, key string, steps []string) (*env.Env, error) {
	tmp, err := os.MkdirTemp("", "cwm-instance-")
	if err != nil {
		return nil, err
	}
	defer sandbox.RemoveAll(tmp)
	upper := filepath.Join(tmp, "upper")
	if err := sb.Snapshot(upper); err != nil {
		return nil, err
	}
	tree, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"git", "-C", clone, "rev-parse", base + "^{tree}"}, Timeout: time.Minute})
	if err != nil {
		return nil, err
	}
	spec := env.DeriveSpec{Key: key, Name: "swe-" + id, Commit: base, Tree: strings.TrimSpace(string(tree))}
	for _, s := range steps {
		spec.Install = append(spec.Install, env.Step{Command: s, Status: "ok", Note: "at base_commit " + short(base)})
	}
	return o.Store.Derive(ctx, e, upper, spec)
}

// caVars stages the host's certificate bundle (a TLS-inspecting proxy's
// authority among it) when the policy names one, and says pip and
// Python's clients should trust it.
func (o Options) caVars(ctx context.Context, sb *sandbox.Sandbox) ([]string, error) {
	if o.Egress == nil || o.Egress.CABundle == "" {
		return nil, nil
	}
	b, err := os.ReadFile(o.Egress.CABundle)
	if err != nil {
		return nil, fmt.Errorf("read the certificate bundle: %w", err)
	}
	if err := sb.WriteFile(ctx, instanceCA, b, 0o644); err != nil {
		return nil, fmt.Errorf("stage the certificate bundle: %w", err)
	}
	return []string{"PIP_CERT=" + instanceCA, "SSL_CERT_FILE=" + instanceCA, "REQUESTS_CA_BUNDLE=" + instanceCA}, nil
}

// runStep runs one step in bash in the repository with the relay's proxy
// and the policy's index; "" when it succeeded, else why not.
func (o Options) runStep(ctx context.Context, sb *sandbox.Sandbox, step string, vars []string) (string, error) {
	proxy := []string{}
	var relay *egress.Relay
	if o.Egress != nil {
		r, err := egress.Start(ctx, sb, *o.Egress)
		if err != nil {
			return "", err
		}
		relay = r
		proxy = append(r.Env(), o.Egress.IndexEnv()...)
	}
	vs := slices.Concat(proxy, vars, []string{"PIP_NO_CACHE_DIR=1", "PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1"})
	if o.UploadedPriorTo != "" {
		vs = append(vs, "PIP_UPLOADED_PRIOR_TO="+o.UploadedPriorTo)
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"bash", "-c", instancePrelude + step}, Dir: env.RepoRoot, Env: vs, Timeout: instanceTimeout, Capture: 1 << 20})
	note := ""
	if relay != nil {
		note = refusals(relay.Close())
	}
	if err != nil {
		return "", fmt.Errorf("run %q: %w", step, err)
	}
	if res.Success() {
		return "", nil
	}
	why := fmt.Sprintf("step %q at base_commit: %s: %s", step, res.Describe(), lastLines(append(res.Stdout, res.Stderr...)))
	if note != "" {
		why += " (" + note + ")"
	}
	return why, nil
}

// refusals names the hosts the relay refused, once each.
func refusals(s egress.Stats) string {
	var seen []string
	for _, r := range s.Refusals {
		if str := r.String(); !slices.Contains(seen, str) {
			seen = append(seen, str)
		}
	}
	if len(seen) == 0 {
		return ""
	}
	return "egress refused: " + strings.Join(seen, ", ")
}

// lastLines is the end of a step's output, on one line.
func lastLines(b []byte) string {
	s := strings.TrimSpace(string(b))
	lines := strings.Split(s, "\n")
	if len(lines) > 3 {
		lines = lines[len(lines)-3:]
	}
	return strings.Join(lines, " | ")
}

var versionTag = lazyre.New(`^v?(\d+(?:\.\d+)*)$`)

// scmVersion is the version setuptools_scm would give the project at
// base in a clone with its tags, as the harness's clone has them: the
// sandbox's repository has base's tree but neither its history nor its
// tags, from which setuptools_scm makes 0.1.dev1 (and pytest's tox.ini,
// for one, then refuses the pytest that runs it). The nearest tag when
// base is tagged; else its next version, .devN after it (setuptools_scm's
// guess-next-dev, without the local part); "" when the nearest tag is not
// a version.
func scmVersion(ctx context.Context, clone, base string) string {
	out, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"git", "-C", clone, "describe", "--tags", "--long", base}, Timeout: time.Minute})
	if err != nil {
		return ""
	}
	d := strings.TrimSpace(string(out))
	// TAG-N-gSHA, the tag possibly holding dashes itself.
	i := strings.LastIndex(d, "-g")
	if i < 0 {
		return ""
	}
	j := strings.LastIndex(d[:i], "-")
	if j < 0 {
		return ""
	}
	m := versionTag().FindStringSubmatch(d[:j])
	n, err := strconv.Atoi(d[j+1 : i])
	if m == nil || err != nil {
		return ""
	}
	if n == 0 {
		return m[1]
	}
	parts := strings.Split(m[1], ".")
	last, _ := strconv.Atoi(parts[len(parts)-1])
	parts[len(parts)-1] = strconv.Itoa(last + 1)
	return fmt.Sprintf("%s.dev%d", strings.Join(parts, "."), n)
}
