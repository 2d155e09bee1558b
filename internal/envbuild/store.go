package envbuild

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"cwm/internal/sandbox"
	"cwm/internal/testrun"
)

// Env is a built environment: the manifest stored as env.json next to
// its layer. The layer holds /repo (the repository with its git history up
// to the revision) and /venv (what was installed).
type Env struct {
	Version     int             `json:"version"`
	ID          string          `json:"id"`
	Name        string          `json:"name"`
	Repository  Source          `json:"repository"`
	Revision    string          `json:"revision"`
	Tree        string          `json:"tree"`
	Commit      string          `json:"commit"`
	Base        string          `json:"base"`
	Python      string          `json:"python"`
	Online      bool            `json:"online,omitempty"`
	Install     []Step          `json:"install"`
	Test        Step            `json:"test"`
	TestCommand testrun.Command `json:"test_command"`
	Limits      RunLimits       `json:"limits"`
	Runs        []RunRecord     `json:"runs"`
	Counts      Counts          `json:"counts"`
	Baseline    []TestResult    `json:"baseline"`
	Missing     []Missing       `json:"missing_dependencies,omitempty"`
	Usable      bool            `json:"usable"`
	Reason      string          `json:"reason,omitempty"`
	Coverage    *CoverageInfo   `json:"coverage,omitempty"`
	BuiltAt     time.Time       `json:"built_at"`
	BuildSecs   float64         `json:"build_seconds"`
	LayerBytes  int64           `json:"layer_bytes"`
	BuildLog    string          `json:"build_log"`

	// Dir is the environment's directory in the store.
	Dir string `json:"-"`
}

// manifestVersion is the env.json format version. Version 2 stores the
// layer's files with the owners the sandbox sees (uid 0 is the sandbox's
// root), which sandboxes show through an idmapped mount; version 1 layers
// kept files of the sandbox's other users at host uids 100001-165535 and
// are migrated on first use (migrateLayer).
const manifestVersion = 2

// idVersion is the version of what an environment's id hashes; a layer
// migration does not change ids.
const idVersion = 1

// Layer is the host directory of the environment's layer.
func (e *Env) Layer() string { return filepath.Join(e.Dir, "layer") }

// SandboxConfig is the configuration of a sandbox on the environment:
// /repo as the working directory, the venv first on PATH.
func (e *Env) SandboxConfig() sandbox.Config {
	base := e.Base
	if base == "host" {
		base = ""
	}
	return envConfig(e.Layer(), base, e.Limits)
}

func envConfig(layer, base string, l RunLimits) sandbox.Config {
	return sandbox.Config{
		Base: base, Layers: []string{layer}, Workdir: "/repo",
		Env: []string{
			"PATH=/venv/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
			"VIRTUAL_ENV=/venv",
			// The layer already holds the bytecode; writing more would only
			// fill each sandbox's upper layer.
			"PYTHONDONTWRITEBYTECODE=1",
			"PIP_DISABLE_PIP_VERSION_CHECK=1", "PIP_NO_INPUT=1", "PIP_ROOT_USER_ACTION=ignore",
		},
		Limits: sandbox.Limits{Timeout: l.Timeout, Memory: l.Memory, Pids: l.Pids, Output: l.Output, Disk: l.Disk},
	}
}

// Passing lists the tests that pass in every baseline run.
func (e *Env) Passing() []string {
	var out []string
	for _, t := range e.Baseline {
		if t.Status == string(testrun.Pass) {
			out = append(out, t.ID)
		}
	}
	return out
}

// Store is the environments directory, $CWM_HOME/envs.
type Store struct{ dir string }

// NewStore returns the store under home.
func NewStore(home string) *Store { return &Store{dir: filepath.Join(home, "envs")} }

// Dir is the store's directory.
func (st *Store) Dir() string { return st.dir }

// load reads an environment's manifest.
func load(dir string) (*Env, error) {
	data, err := os.ReadFile(filepath.Join(dir, "env.json"))
	if err != nil {
		return nil, err
	}
	var e Env
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, "env.json"), err)
	}
	if e.ID != filepath.Base(dir) {
		return nil, fmt.Errorf("%s: manifest id %q does not match its directory", dir, e.ID)
	}
	e.Dir = dir
	if e.Version < manifestVersion {
		if err := e.migrate(); err != nil {
			return nil, fmt.Errorf("migrate environment %s: %w", e.ID, err)
		}
	}
	return &e, nil
}

// migrate brings a version 1 environment to the current version: files its
// sandboxes' other users (uids and gids 1-65535) owned were stored at host
// ids 100001-165535, which the idmapped mount of a version 2 layer would
// show as nobody's; they get their sandbox ids back. As another user than
// root there were no such files. The manifest is rewritten last, so an
// interrupted migration is redone.
func (e *Env) migrate() error {
	if os.Getuid() == 0 {
		err := filepath.WalkDir(e.Layer(), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			uid, gid := legacyID(st.Uid), legacyID(st.Gid)
			if uid == int(st.Uid) && gid == int(st.Gid) {
				return nil
			}
			return unix.Lchown(p, uid, gid)
		})
		if err != nil {
			return err
		}
	}
	e.Version = manifestVersion
	return e.save()
}

// legacyID maps a host id of a version 1 layer to its sandbox id.
func legacyID(id uint32) int {
	if id > 100000 && id <= 165535 {
		return int(id) - 100000
	}
	return int(id)
}

// save writes the manifest atomically, so a reader sees the old or the new
// one, never half of one.
func (e *Env) save() error {
	data, err := json.MarshalIndent(e, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(filepath.Join(e.Dir, "env.json"), append(data, '\n'))
}

func writeAtomic(path string, data []byte) error {
	tmp := path + ".tmp-" + randomSuffix()
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	return nil
}

func randomSuffix() string {
	var b [6]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// List returns the complete environments (those with a manifest), oldest
// first. Builds in progress and leftovers are not environments.
func (st *Store) List() ([]*Env, error) {
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	var out []*Env
	for _, d := range ents {
		if !d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			continue
		}
		e, err := load(filepath.Join(st.dir, d.Name()))
		if err != nil {
			continue // partial or foreign: env gc removes it
		}
		out = append(out, e)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].BuiltAt.Equal(out[j].BuiltAt) {
			return out[i].BuiltAt.Before(out[j].BuiltAt)
		}
		return out[i].ID < out[j].ID
	})
	return out, nil
}

// Get returns the environment with exactly this id, or nil.
func (st *Store) Get(id string) *Env {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil
	}
	e, err := load(filepath.Join(st.dir, id))
	if err != nil {
		return nil
	}
	return e
}

// Resolve finds an environment by id, unique id prefix, or name. When
// several environments share a name, the most recently built wins: a name
// follows rebuilds.
func (st *Store) Resolve(ref string) (*Env, error) {
	if ref == "" {
		return nil, inputErrorf("no environment given")
	}
	if e := st.Get(ref); e != nil {
		return e, nil
	}
	all, err := st.List()
	if err != nil {
		return nil, err
	}
	var prefix []*Env
	var named *Env
	for _, e := range all {
		if strings.HasPrefix(e.ID, ref) {
			prefix = append(prefix, e)
		}
		if e.Name == ref {
			named = e // List is oldest first: the last one is the newest
		}
	}
	switch {
	case len(prefix) == 1:
		return prefix[0], nil
	case len(prefix) > 1:
		var ids []string
		for _, e := range prefix {
			ids = append(ids, e.ID)
		}
		return nil, inputErrorf("environment %q is ambiguous: it starts %s", ref, strings.Join(ids, ", "))
	case named != nil:
		return named, nil
	}
	return nil, inputErrorf("no environment %q (see cwm env ls)", ref)
}

// Remove deletes an environment. It disappears at once (renamed away),
// then its files are removed.
func (st *Store) Remove(e *Env) error {
	trash := filepath.Join(st.dir, ".trash-"+randomSuffix())
	if err := os.Rename(e.Dir, trash); err != nil {
		return fmt.Errorf("remove environment %s: %w", e.ID, err)
	}
	if err := sandbox.RemoveAll(trash); err != nil {
		return fmt.Errorf("remove environment %s: %w", e.ID, err)
	}
	return nil
}

// GC removes unusable environments, directories without a manifest,
// abandoned builds and removal leftovers. It returns what it removed.
func (st *Store) GC() ([]string, error) {
	ents, err := os.ReadDir(st.dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list environments: %w", err)
	}
	var removed []string
	var first error
	for _, d := range ents {
		p := filepath.Join(st.dir, d.Name())
		name := d.Name()
		switch {
		case strings.HasPrefix(name, ".build-"):
			if buildAlive(p) {
				continue
			}
		case strings.HasPrefix(name, ".trash-"):
		case !d.IsDir():
			continue
		default:
			e, err := load(p)
			if err == nil && e.Usable {
				continue
			}
		}
		if err := sandbox.RemoveAll(p); err != nil {
			if first == nil {
				first = fmt.Errorf("remove %s: %w", p, err)
			}
			continue
		}
		removed = append(removed, name)
	}
	return removed, first
}

// stage is a build in progress: a hidden directory whose lock the
// building process holds, so env gc knows it is alive.
type stage struct {
	dir  string
	lock *os.File
}

func (st *Store) newStage() (*stage, error) {
	if err := os.MkdirAll(st.dir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", st.dir, err)
	}
	dir, err := os.MkdirTemp(st.dir, ".build-")
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
	return &stage{dir: dir, lock: lock}, nil
}

// discard removes the stage (after a failed or redundant build).
func (s *stage) discard() {
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
