package swenative

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"time"

	"cwm/internal/errkind"
	"cwm/internal/hostexec"
	"cwm/internal/task"
)

// specScript asks the installed swebench for the specifications (see its
// doc string): the harness's own tables and rules, so that cwm follows
// whatever version the user has installed.
//
//go:embed spec.py
var specScript string

// specTimeout bounds reading the specifications (git show per
// requirements file, at most a few per version group).
const specTimeout = 5 * time.Minute

// Spec is the harness's specification of one (repository, version), with
// the requirement files it names read from the clone at the setup commit.
type Spec struct {
	Repo    string `json:"repo"`
	Version string `json:"version"`
	// SetupCommit is the environment_setup_commit of the group's first
	// instance (the harness's rule: one per version).
	SetupCommit string `json:"setup_commit"`
	Fields      struct {
		Python       string   `json:"python"`
		Packages     string   `json:"packages"`
		PipPackages  []string `json:"pip_packages"`
		PreInstall   []string `json:"pre_install"`
		Install      string   `json:"install"`
		EvalCommands []string `json:"eval_commands"`
	} `json:"spec"`
	// Requirements is get_requirements' text (packages
	// "requirements.txt"); EnvironmentYML get_environment_yml's
	// ("environment.yml").
	Requirements   string `json:"requirements"`
	EnvironmentYML string `json:"environment_yml"`
	// Pyproject is the project's pyproject.toml at the setup commit
	// ("" when it has none).
	Pyproject string `json:"pyproject"`
	// Error says why the files could not be read.
	Error string `json:"error"`
}

// instanceSpec is an instance's part: its group, the harness's test
// command (test_cmd and the test directives) and the parser's name.
type instanceSpec struct {
	Group   string `json:"group"`
	TestCmd string `json:"test_cmd"`
	Parser  string `json:"parser"`
	Error   string `json:"error"`
}

// specs is what spec.py answers.
type specs struct {
	Swebench  string                  `json:"swebench"`
	Groups    map[string]*Spec        `json:"groups"`
	Instances map[string]instanceSpec `json:"instances"`
	Error     string                  `json:"error"`
}

// FindPython is the Python to read the specifications with: want when
// given, else the first python3 on PATH that imports swebench.
func FindPython(ctx context.Context, want string) (string, error) {
	if want != "" {
		p, err := exec.LookPath(want)
		if err != nil {
			return "", errkind.Errorf(errkind.Input, "--swebench-python %s: %v", want, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("python3")
	if err == nil {
		if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{p, "-c", "import importlib.util as u, sys; sys.exit(u.find_spec('swebench') is None)"}, Timeout: time.Minute}); err == nil {
			return p, nil
		}
	}
	return "", errkind.Errorf(errkind.Input, "no python3 on PATH imports swebench: install swebench 4.x (the last with MAP_REPO_VERSION_TO_SPECS) and name its Python with --swebench-python")
}

// readSpecs asks python's swebench for the specifications of insts,
// reading requirement files from clones (repository -> its clone).
func readSpecs(ctx context.Context, python string, insts []task.Task, clones map[string]string) (*specs, error) {
	type row struct {
		ID      string `json:"instance_id"`
		Repo    string `json:"repo"`
		Version string `json:"version"`
		Test    string `json:"test_patch"`
		Setup   string `json:"environment_setup_commit"`
	}
	in := struct {
		Clones    map[string]string `json:"clones"`
		Instances []row             `json:"instances"`
	}{Clones: clones}
	for _, t := range insts {
		in.Instances = append(in.Instances, row{t.InstanceID, t.Repo, t.Version, t.TestPatch, t.EnvironmentSetupCommit})
	}
	b, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	f, err := os.CreateTemp("", "cwm-swespec-*.json")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, err = f.Write(b)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, fmt.Errorf("write the instances for swebench: %w", err)
	}
	out, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{python, "-c", specScript, f.Name()}, Timeout: specTimeout})
	if err != nil {
		return nil, fmt.Errorf("read swebench's specifications with %s: %w", python, err)
	}
	var s specs
	if err := json.Unmarshal(out, &s); err != nil {
		return nil, fmt.Errorf("read swebench's specifications with %s: %v (%.200s)", python, err, out)
	}
	if s.Error != "" {
		return nil, errkind.Errorf(errkind.Input, "%s: %s", python, s.Error)
	}
	return &s, nil
}
