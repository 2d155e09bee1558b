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
	return &Stage{store: st, dir: dir, lock: lock, env: &Env{Version: ManifestVersion, dir: dir}}, nil
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

// Publish stores the environment: its manifest is written (with the
// layer's size and where the build log will be) and the stage becomes the
// environment's directory. An environment already stored under the id is
// replaced when it is unusable or force is set; otherwise (another build of
// the same id won the race) it is kept and the stage dropped. Either way
// Env then lives in the store.
func (s *Stage) Publish(force bool) error {
	e := s.env
	final := filepath.Join(s.store.dir, e.ID)
	e.LayerBytes = diskUsage(s.LayerDir())
	e.BuildLog = filepath.Join(final, BuildLog)
	if err := e.save(); err != nil {
		return fmt.Errorf("write manifest: %w", err)
	}
	if old, err := load(final); err == nil || !errors.Is(err, os.ErrNotExist) {
		if err == nil && old.Usable && !force {
			s.Discard()
			e.dir = final
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
// the stage keeps its directory.
func (s *Stage) Adopt(m Env) {
	m.dir = s.dir
	*s.env = m
}
