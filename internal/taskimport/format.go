package taskimport

import (
	"fmt"
	"path"
	"sort"
	"strings"

	"cwm/internal/errkind"
	"cwm/internal/lazyre"
	"cwm/internal/logparse"
	"cwm/internal/task"
)

// Formats are the datasets import reads, by the --format names.
var Formats = []string{"swebench", "swe-gym", "r2e-gym", "swe-smith", "swe-rebench-v2", "harbor"}

// MaxProblem bounds a problem statement: the published datasets' longest
// are some tens of KiB; a longer one is a dump, not an issue.
const MaxProblem = 256 << 10

// Where the datasets' images keep things (docs/tasks.md has the table).
const (
	testbed   = "/testbed"
	condaBin  = "/opt/miniconda3/envs/testbed/bin" // SWE-bench's conda env "testbed"
	r2eVenv   = "/testbed/.venv/bin"
	r2eHidden = "/r2e_tests"
	// pytestRA is the runner of rows that name no test command: pytest
	// with -rA, whose summary SWE-bench's parsers read.
	pytestRA = "pytest --no-header -rA --tb=no -p no:cacheprovider"
)

// instance makes r a task of format: the dataset's fields in cwm's
// schema and how its harness runs it. What is wrong with the row is a
// *rowError. Fields the image holds (base_commit where a row has none) are
// filled in by validation.
func instance(format string, r row) (task.Task, error) {
	var t task.Task
	var err error
	if t.InstanceID, err = r.first("instance_id"); err != nil {
		return t, err
	}
	if t.ProblemStatement, err = r.nonEmpty("problem_statement"); err != nil {
		return t, err
	}
	if len(t.ProblemStatement) > MaxProblem {
		return t, bad("problem_statement is %d bytes, more than %d", len(t.ProblemStatement), MaxProblem)
	}
	imp := &task.Imported{Format: format, Workdir: testbed}
	t.Imported = imp
	switch format {
	case "swebench", "swe-gym":
		err = sweBench(&t, r, format)
	case "swe-smith":
		err = sweSmith(&t, r)
	case "r2e-gym":
		err = r2eGym(&t, r)
	case "swe-rebench-v2":
		err = sweRebench(&t, r)
	default:
		return t, errkind.Errorf(errkind.Usage, "unknown format %q (known: %s)", format, strings.Join(Formats, ", "))
	}
	if err != nil {
		return t, err
	}
	if t.InstanceID == "" {
		return t, bad("missing field %q", "instance_id")
	}
	err = fill(field{&t.HintsText, r.opt, "hints_text"}, field{&t.CreatedAt, r.opt, "created_at"},
		field{&t.Version, r.opt, "version"}, field{&t.EnvironmentSetupCommit, r.opt, "environment_setup_commit"})
	if err != nil {
		return t, err
	}
	if _, err := logparse.Get(imp.LogParser); err != nil {
		return t, bad("%v", err)
	}
	imp.TestFiles = patchFiles(t.TestPatch)
	if f := touchesTests(t.Patch, imp.TestFiles); f != "" {
		return t, bad("the gold patch touches the test file %s", f)
	}
	t.Kind = "imported"
	return t, nil
}

// common reads the SWE-bench schema's fields that every format but
// R2E-Gym has; base reads base_commit (r.nonEmpty, or r.opt where the
// image's HEAD may stand for it).
func common(t *task.Task, r row, base func(string) (string, error)) error {
	if t.InstanceID == "" {
		return bad("missing field %q", "instance_id")
	}
	err := fill(field{&t.BaseCommit, base, "base_commit"}, field{&t.Repo, r.nonEmpty, "repo"}, field{&t.Patch, r.nonEmpty, "patch"}, field{&t.TestPatch, r.opt, "test_patch"})
	if err != nil {
		return err
	}
	if t.FailToPass, err = r.tests("FAIL_TO_PASS"); err != nil {
		return err
	}
	if len(t.FailToPass) == 0 {
		return bad("FAIL_TO_PASS is empty")
	}
	t.PassToPass, err = r.tests("PASS_TO_PASS")
	return err
}

func sweBench(t *task.Task, r row, format string) error {
	if err := common(t, r, r.nonEmpty); err != nil {
		return err
	}
	var err error
	imp := t.Imported
	imp.Path = []string{condaBin}
	if imp.Image, err = r.first("image_name", "image", "docker_image"); err != nil {
		return err
	}
	if imp.Image == "" {
		imp.Image = sweBenchImage(t.InstanceID, format)
	}
	if imp.LogParser, err = r.opt("log_parser"); err != nil {
		return err
	}
	if imp.LogParser == "" {
		imp.LogParser = "parse_log_pytest"
		if p, ok := logparse.ForRepo(t.Repo); ok {
			imp.LogParser = p
		}
	}
	script, err := r.opt("eval_script")
	if err != nil {
		return err
	}
	if script != "" {
		imp.TestCommand, imp.OwnScript = script, true
		return nil
	}
	imp.TestCommand = testCommand(imp.LogParser, patchFiles(t.TestPatch))
	return nil
}

// sweBenchImage is the image SWE-bench's harness names for an instance
// (swebench's image_spec: sweb.eval.x86_64.<id>:latest under the
// swebench namespace, lower case, "__" written "_1776_" since Docker Hub
// refuses it); SWE-Gym's images are xingyaoww's, with "_s_".
func sweBenchImage(id, format string) string {
	key := strings.ToLower("sweb.eval.x86_64." + id + ":latest")
	if format == "swe-gym" {
		return "xingyaoww/" + strings.ReplaceAll(key, "__", "_s_")
	}
	return strings.ReplaceAll("swebench/"+key, "__", "_1776_")
}

// testCommand is the test command of a row that gives none, as SWE-bench's
// classic specifications ran its repositories: the runner its parser
// reads, on the test files the test patch touches (for django's runner,
// as modules).
func testCommand(parser string, files []string) string {
	var dirs []string
	for _, f := range files {
		if nonTest(f) {
			continue
		}
		if parser == "parse_log_django" {
			f = strings.TrimPrefix(strings.TrimSuffix(f, ".py"), "tests/")
			f = strings.ReplaceAll(f, "/", ".")
		}
		dirs = append(dirs, shellQuote(f))
	}
	cmd := pytestRA
	switch parser {
	case "parse_log_django":
		cmd = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
	case "parse_log_sympy":
		cmd = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning' bin/test -C --verbose"
	}
	return strings.Join(append([]string{cmd}, dirs...), " ")
}

// nonTest is a file of a test patch that is data, not tests (swebench's
// NON_TEST_EXTS).
func nonTest(f string) bool {
	for _, ext := range []string{".json", ".png", "csv", ".txt", ".md", ".jpg", ".jpeg", ".pkl", ".yml", ".yaml", ".toml"} {
		if strings.HasSuffix(f, ext) {
			return true
		}
	}
	return false
}

func sweSmith(t *task.Task, r row) error {
	if err := common(t, r, r.opt); err != nil {
		return err
	}
	// SWE-smith's patch makes the bug in the image's clean tree; the fix
	// is its reverse, which validation computes in the image.
	t.BugPatch, t.Patch = t.Patch, ""
	var err error
	imp := t.Imported
	imp.Path = []string{condaBin}
	if imp.Image, err = r.nonEmpty("image_name"); err != nil {
		return err
	}
	imp.LogParser = "parse_log_pytest"
	imp.TestCommand = "pytest --disable-warnings --color=no --tb=no -rA"
	return nil
}

func r2eGym(t *task.Task, r row) error {
	var err error
	imp := t.Imported
	if imp.Image, err = r.nonEmpty("docker_image"); err != nil {
		return err
	}
	if t.InstanceID == "" {
		t.InstanceID = imageID(imp.Image)
	}
	if t.Repo, err = r.first("repo_name", "repo"); err != nil {
		return err
	}
	err = fill(field{&t.Patch, r.nonEmpty, "patch"}, field{&t.TestPatch, r.opt, "test_patch"}, field{&t.BaseCommit, r.opt, "base_commit"})
	if err != nil {
		return err
	}
	exp, err := r.object("expected_output_json")
	if err != nil {
		return err
	}
	imp.Expected = map[string]string{}
	for k, v := range exp {
		s, ok := v.(string)
		if !ok {
			return bad("expected_output_json: test %q has %s, want a status", k, kind(v))
		}
		imp.Expected[k] = s
	}
	if len(imp.Expected) == 0 {
		return bad("expected_output_json names no test")
	}
	imp.Path = []string{r2eVenv}
	imp.HiddenTests = r2eHidden
	imp.LogParser = "parse_log_pytest"
	imp.TestCommand = "bash run_tests.sh"
	return nil
}

// imageID names an instance by its image (R2E-Gym's rows have no id):
// "namanjain12/pandas_final:abc" is "pandas_final__abc".
func imageID(ref string) string {
	name, tag, _ := strings.Cut(path.Base(ref), ":")
	if tag == "" {
		return name
	}
	return name + "__" + tag
}

func sweRebench(t *task.Task, r row) error {
	if lang, err := r.opt("language"); err != nil {
		return err
	} else if lang != "" && !strings.EqualFold(lang, "python") {
		return bad("language %s: only Python rows are imported yet", lang)
	}
	if err := common(t, r, r.nonEmpty); err != nil {
		return err
	}
	var err error
	imp := t.Imported
	if imp.Image, err = r.nonEmpty("image_name"); err != nil {
		return err
	}
	// SWE-rebench V2 keeps the repository at /{name}.
	imp.Workdir = "/" + path.Base(t.Repo)
	cfg, err := r.object("install_config")
	if err != nil {
		return err
	}
	switch c := cfg["test_cmd"].(type) {
	case string:
		imp.TestCommand = c
	case []any:
		var cmds []string
		for _, x := range c {
			s, ok := x.(string)
			if !ok {
				return bad("install_config.test_cmd holds %s, want strings", kind(x))
			}
			cmds = append(cmds, s)
		}
		imp.TestCommand = strings.Join(cmds, "\n")
	case nil:
		return bad("install_config has no test_cmd")
	default:
		return bad("install_config.test_cmd is %s, want a string or a list", kind(c))
	}
	if strings.TrimSpace(imp.TestCommand) == "" {
		return bad("install_config.test_cmd is empty")
	}
	p, ok := cfg["log_parser"].(string)
	if !ok || p == "" {
		return bad("install_config has no log_parser")
	}
	imp.LogParser = p
	return nil
}

var diffHeader = lazyre.New(`(?m)^diff --git a/(\S+) b/(\S+)$`)

// patchFiles are the files a patch touches, sorted.
func patchFiles(p string) []string {
	seen := map[string]bool{}
	for _, m := range diffHeader().FindAllStringSubmatch(p, -1) {
		seen[m[1]], seen[m[2]] = true, true
	}
	var out []string
	for f := range seen {
		if f != "/dev/null" {
			out = append(out, f)
		}
	}
	sort.Strings(out)
	return out
}

// touchesTests is a file of the gold patch that is a test file: one the
// test patch touches, or one named as tests are (a tests/ or testing/
// directory, test_*.py, *_test.py, conftest.py).
func touchesTests(gold string, testFiles []string) string {
	tf := map[string]bool{}
	for _, f := range testFiles {
		tf[f] = true
	}
	for _, f := range patchFiles(gold) {
		base := path.Base(f)
		if tf[f] || strings.HasPrefix(base, "test_") || strings.HasSuffix(base, "_test.py") || base == "conftest.py" {
			return f
		}
		for _, d := range strings.Split(path.Dir(f), "/") {
			if d == "tests" || d == "test" || d == "testing" {
				return f
			}
		}
	}
	return ""
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (r row) String() string { return fmt.Sprintf("row %d", r.n) }
