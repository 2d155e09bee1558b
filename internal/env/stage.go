package env

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"golang.org/x/sys/unix"

	"cwm/internal/sandbox"
)

// stagePrefix names the hidden directories of builds in progress.
const stagePrefix = ".build-"

// Stage is a build in progress: a hidden directory of the store whose lock
// the building process holds, so that env gc knows it is alive. The
// builder writes the layer into LayerDir, fills the manifest of Env and
// publishes it; until then nothing lists it.
type Stage struct {
	store *Store
	dir   string
	lock  *os.File
	env   *Env
}

// NewStage starts a build in the store.
func (st *Store) NewStage() (*Stage, error) {
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", st.dir, err)
	}
	dir, err := os.MkdirTemp(st.dir, stagePrefix)
	if err != nil {
		return nil, fmt.Errorf("create build directory: %w", err)
	}
	os.Chmod(dir, 0o755)
	lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		sandbox.RemoveAll(dir)
		return nil, err
	}
	if err := unix.Flock(int(lock.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		lock.Close()
		sandbox.RemoveAll(dir)
		return nil, fmt.Errorf("lock build directory: %w", err)
	}
	return &Stage{store: st, dir: dir, lock: lock, env: &Env{Version: ManifestVersion, dir: dir, building: true}}, nil
}

// Dir is the build's directory, for its scratch files and its log.
func (s *Stage) Dir() string { return s.dir }

// LayerDir is the directory the builder writes the layer into.
func (s *Stage) LayerDir() string { return filepath.Join(s.dir, "layer") }

// Env is the environment being built. Sandboxes.Open starts sandboxes on
// its layer as it is so far (set Base first).
func (s *Stage) Env() *Env { return s.env }

// BuildLog is the name of the build's log in the environment's directory.
const BuildLog = "build.log"

// Publish stores the environment: its manifest, baseline and origin are
// written (with the layer's size and where the build log will be) and the
// stage becomes the environment's directory. A build's origin grants the
// base and limits it was built with; an adopted environment's is the one
// Adopt was given. An environment already stored under the id is
// replaced when it is unusable or force is set; otherwise (another build of
// the same id won the race) it is kept and the stage dropped. Either way
// Env then lives in the store.
func (s *Stage) Publish(force bool) error {
	e := s.env
	final := filepath.Join(s.store.dir, e.ID)
	e.LayerBytes = diskUsage(s.LayerDir())
	e.BuildLog = filepath.Join(final, BuildLog)
	if e.building {
		e.origin = &Origin{Kind: OriginBuilt, At: e.BuiltAt, Grant: Grant{Base: e.Base, Limits: e.Limits}}
	}
	if err := writeOrigin(s.dir, e.origin); err != nil {
		return fmt.Errorf("write origin: %w", err)
	}
	if _, err := os.Stat(filepath.Join(s.dir, BaselineFile)); e.Baseline != nil || errors.Is(err, fs.ErrNotExist) {
		if err := e.saveBaseline(); err != nil {
			return fmt.Errorf("write baseline: %w", err)
		}
	}
	if err := e.save(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if old, err := load(final); err == nil || !errors.Is(err, os.ErrNotExist) {
		if err == nil && old.Usable && !force {
			s.Discard()
			e.dir, e.building = final, false
			return nil
		}
		trash := filepath.Join(s.store.dir, ".trash-"+randomSuffix())
		if err := os.Rename(final, trash); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("replace environment %s: %w", e.ID, err)
		}
		defer sandbox.RemoveAll(trash)
	}
	if err := os.Rename(s.dir, final); err != nil {
		return fmt.Errorf("store environment: %w", err)
	}
	os.Remove(filepath.Join(final, "lock"))
	s.lock.Close()
	e.dir = final
	e.building = false
	return nil
}

// Discard removes the stage (after a failed or redundant build).
func (s *Stage) Discard() {
	s.lock.Close()
	sandbox.RemoveAll(s.dir)
}

// buildAlive reports whether a build directory's builder still runs.
func buildAlive(dir string) bool {
	f, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
	if err != nil {
		return false
	}
	defer f.Close()
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil
}

// diskUsage is what a tree costs on disk (allocated blocks, hard links
// once), as du reports.
func diskUsage(root string) int64 {
	var total int64
	seen := map[[2]uint64]bool{}
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		var st unix.Stat_t
		if unix.Lstat(p, &st) != nil {
			return nil
		}
		key := [2]uint64{uint64(st.Dev), st.Ino}
		if st.Nlink > 1 && seen[key] {
			return nil
		}
		seen[key] = true
		total += st.Blocks * 512
		return nil
	})
	return total
}

// Adopt makes the stage's manifest m, an environment made elsewhere (a
// pulled or imported one), whose layer is being written into LayerDir;
// the stage keeps its directory. o says where it came from and what this
// machine grants it: m's base must be the granted one (the caller sets it
// so), and its limits are clamped to the grant whenever a sandbox starts.
// m's baseline, when set, is written; otherwise BaselineFile is expected
// in the stage's directory (copied from the artifact).
func (s *Stage) Adopt(m Env, o Origin) {
	m.dir = s.dir
	m.origin = &o
	m.building = false
	*s.env = m
}
