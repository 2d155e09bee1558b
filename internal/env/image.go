package env

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// OriginDataset is the origin of an environment recorded for a published
// dataset's image by cwm tasks import: this machine pulled the image and
// stored it as a base, so the grant is that base.
const OriginDataset = "dataset"

// ImageSpec is how sandboxes stand on a published dataset's image (a
// SWE-bench instance image, an R2E-Gym or SWE-rebench image): its base
// as it is, with an empty layer, the repository where the image keeps
// it, and the directories the dataset's harness puts first on PATH (a
// conda env, a venv) before the image's own. An imported task names
// such an environment (its env_id), so that every stage opens its
// sandboxes as it opens a native task's; how the task is graded (its
// test command, log parser, hidden tests) stays in the task's imported
// part, because it is the instance's own (docs/tasks.md).
type ImageSpec struct {
	// Ref is the image's reference, as it was pulled.
	Ref string `json:"ref"`
	// Workdir is the repository's directory in the image.
	Workdir string `json:"workdir"`
	// Path lists the directories put first on PATH.
	Path []string `json:"path,omitempty"`
}

// imageTimeout bounds one command in an image's sandboxes: what a
// dataset's slowest test suites need.
const imageTimeout = 30 * time.Minute

// config is the configuration of a sandbox on an image's environment: the
// base's root and Env, spec's PATH before the image's, in the repository.
func (spec *ImageSpec) config(e *Env, root string, l RunLimits) (sandbox.Config, error) {
	if !IsBaseDigest(root) {
		return sandbox.Config{}, fmt.Errorf("environment %s of image %s names base %q, not a stored base", e.ID, spec.Ref, root)
	}
	b, err := e.storedBase(root)
	if err != nil {
		return sandbox.Config{}, err
	}
	var over []string
	if len(spec.Path) > 0 {
		over = []string{"PATH=" + strings.Join(spec.Path, ":")}
	}
	return sandbox.Config{Base: b.Rootfs(), Env: b.SandboxEnv(over), Workdir: spec.Workdir, Limits: l.sandbox()}, nil
}

// imageID is the id of the environment of spec on base digest: the same
// image, directory and PATH make the same environment.
func imageID(digest string, spec ImageSpec) string {
	h := sha256.Sum256([]byte(digest + "\n" + spec.Workdir + "\n" + strings.Join(spec.Path, ":")))
	return "image-" + hex.EncodeToString(h[:6])
}

// RecordImage stores (or finds) the environment of spec on b, a base of
// this machine's store: a manifest with an empty layer, usable, whose
// Python is the one the image's PATH finds (run in a sandbox there; ""
// when it has none) and whose test command is test. It is what lets an
// imported task run wherever a native one does.
func (st *Store) RecordImage(ctx context.Context, sbs *Sandboxes, b *base.Base, spec ImageSpec, test testrun.Command) (*Env, error) {
	id := imageID(b.Digest, spec)
	if e := st.Get(id); e != nil {
		return e, nil
	}
	s, err := st.NewStage()
	if err != nil {
		return nil, fmt.Errorf("record the environment of %s: %w", spec.Ref, err)
	}
	if err := os.Mkdir(s.LayerDir(), 0o755); err != nil {
		s.Discard()
		return nil, fmt.Errorf("record the environment of %s: %w", spec.Ref, err)
	}
	limits := RunLimits{Timeout: imageTimeout}
	m := Env{Version: ManifestVersion, ID: id, Name: spec.Ref, Base: b.Digest, TestCommand: test,
		Limits: limits, Usable: true, BuiltAt: time.Now().UTC(), Image: &spec, Baseline: []TestResult{}}
	s.Adopt(m, Origin{Kind: OriginDataset, From: spec.Ref, At: m.BuiltAt, Grant: Grant{Base: b.Digest, Limits: limits}})
	py, err := imagePython(ctx, sbs, s.Env())
	if err != nil {
		s.Discard()
		return nil, fmt.Errorf("record the environment of %s: %w", spec.Ref, err)
	}
	s.Env().Python = py
	if err := s.Publish(false); err != nil {
		s.Discard()
		return nil, fmt.Errorf("record the environment of %s: %w", spec.Ref, err)
	}
	return s.Env(), nil
}

// imagePython is the X.Y.Z of the python3 (else python) e's PATH finds
// in the repository, "" when there is none.
func imagePython(ctx context.Context, sbs *Sandboxes, e *Env) (string, error) {
	sb, err := sbs.Open(ctx, e)
	if err != nil {
		return "", err
	}
	defer sb.Close()
	const probe = `for p in python3 python; do command -v $p >/dev/null && exec $p -c 'import platform; print(platform.python_version())'; done; true`
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{"/bin/sh", "-c", probe}, Timeout: time.Minute})
	if err != nil {
		return "", fmt.Errorf("find the image's Python: %w", err)
	}
	if !res.Success() {
		return "", nil
	}
	return strings.TrimSpace(string(res.Stdout)), nil
}

// AddPassing adds ids to the baseline of e, an image's environment, as
// tests that pass there: cwm tasks import adds the PASS_TO_PASS tests of
// each task it keeps on the image (they pass with and without its fix),
// which are the tests trace repo records and select may run.
func (e *Env) AddPassing(ids []string) error {
	if e.Image == nil {
		return fmt.Errorf("environment %s is not an image's: its baseline is its build's", e.ID)
	}
	have := map[string]bool{}
	for _, t := range e.Baseline {
		have[t.ID] = true
	}
	added := false
	for _, id := range ids {
		if !have[id] {
			have[id] = true
			added = true
			e.Baseline = append(e.Baseline, TestResult{ID: id, Status: string(testrun.Pass), Outcomes: []testrun.Outcome{testrun.Pass}, Seconds: []float64{0}})
		}
	}
	if !added {
		return nil
	}
	if err := e.saveBaseline(); err != nil {
		return fmt.Errorf("record the passing tests of %s: %w", e.ID, err)
	}
	return nil
}
