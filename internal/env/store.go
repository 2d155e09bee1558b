package env

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

	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// Store is the environments directory, $CWM_HOME/envs: one directory per
// environment, named by its id, holding env.json, the layer, the coverage
// map and the build log; hidden directories are builds in progress
// (.build-*) and removals (.trash-*).
type Store struct{ dir string }

// NewStore returns the store under home.
func NewStore(home string) *Store { return &Store{dir: filepath.Join(home, "envs")} }

// Dir is the store's directory.
func (st *Store) Dir() string { return st.dir }

// ManifestFile is the manifest's file in an environment's directory.
const ManifestFile = "env.json"

// load reads an environment's manifest and origin, not its baseline
// (loadBaseline): listing the store reads env.json alone. A manifest past
// MaxManifest is refused (unread, or, for a version 2 one whose baseline
// made it large, once its baseline is out).
func load(dir string) (*Env, error) {
	path := filepath.Join(dir, ManifestFile)
	data, err := readCapped(path, MaxManifest, "manifest (env.json)")
	var big *tooBigError
	if errors.As(err, &big) {
		// A version 2 manifest held the baseline: it is split as it is
		// read, in bounded memory; any other is refused.
		data, err = splitLegacy(dir, big)
	}
	if err != nil {
		return nil, err
	}
	var e Env
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, errkind.Errorf(errkind.Input, "read %s: %v", path, err)
	}
	if e.ID != filepath.Base(dir) {
		return nil, errkind.Errorf(errkind.Input, "%s: manifest id %q does not match its directory", dir, e.ID)
	}
	if e.Version > ManifestVersion {
		return nil, errkind.Errorf(errkind.Input, "%s: manifest version %d; this cwm reads up to %d: upgrade cwm", dir, e.Version, ManifestVersion)
	}
	e.dir = dir
	if e.origin, err = readOrigin(dir); err != nil {
		return nil, err
	}
	if e.Version < ManifestVersion {
		if err := e.migrate(data); err != nil {
			return nil, fmt.Errorf("migrate environment %s: %w", e.ID, err)
		}
	}
	return &e, nil
}

// save writes the manifest atomically, so a reader sees the old or the new
// one, never half of one.
func (e *Env) save() error {
	return writeJSONAtomic(filepath.Join(e.dir, ManifestFile), e)
}

// writeJSONAtomic writes v as indented JSON with writeAtomic: the
// manifest and the origin, files people read.
func writeJSONAtomic(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeAtomic(path, append(data, '\n'))
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

// Get returns the environment with exactly this id, its baseline read, or
// nil.
func (st *Store) Get(id string) *Env {
	e, _ := st.get(id)
	return e
}

// get is Get with the reason an environment whose directory is there
// cannot be read (nil, nil when there is none).
func (st *Store) get(id string) (*Env, error) {
	if id == "" || strings.ContainsAny(id, "/.") {
		return nil, nil
	}
	dir := filepath.Join(st.dir, id)
	e, err := load(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err == nil {
		err = e.loadBaseline()
	}
	if err != nil {
		return nil, fmt.Errorf("environment %s: %w", id, err)
	}
	return e, nil
}

// Resolve finds an environment by id, unique id prefix, or name. When
// several environments share a name, the most recently built usable one
// wins (the most recent one when none is usable): a name follows rebuilds,
// and a failed rebuild does not hide the environment that works. An unknown reference is an error of kind
// errkind.NotFound, an ambiguous one of kind errkind.Input.
func (st *Store) Resolve(ref string) (*Env, error) {
	if ref == "" {
		return nil, errkind.New(errkind.Input, "no environment given")
	}
	if e, err := st.get(ref); e != nil || err != nil {
		return e, err
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
		if e.Name == ref && (named == nil || e.Usable || !named.Usable) {
			named = e // List is oldest first: the newest usable one wins
		}
	}
	switch {
	case len(prefix) == 1:
		named = prefix[0]
	case len(prefix) > 1:
		var ids []string
		for _, e := range prefix {
			ids = append(ids, e.ID)
		}
		return nil, errkind.Errorf(errkind.Input, "environment %q is ambiguous: it starts %s", ref, strings.Join(ids, ", "))
	}
	if named != nil {
		// Read again, with its baseline (List reads none).
		if e, err := st.get(named.ID); e != nil || err != nil {
			return e, err
		}
	}
	return nil, errkind.Errorf(errkind.NotFound, "no environment %q (see cwm env ls)", ref)
}

// Remove deletes an environment. It disappears at once (renamed away),
// then its files are removed.
func (st *Store) Remove(e *Env) error {
	trash := filepath.Join(st.dir, ".trash-"+randomSuffix())
	if err := os.Rename(e.dir, trash); err != nil {
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
		case strings.HasPrefix(name, stagePrefix):
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
