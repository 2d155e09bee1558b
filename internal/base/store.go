package base

import (
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

	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// Store is the bases of one $CWM_HOME, in Home/bases: one directory per
// base named by its digest's hex, published whole by a rename, and the
// stages of imports under way (.stage-*, each locked by its import while
// it runs) and of removals (.rm-*), which List never shows.
type Store struct {
	Home string
}

// NewStore is the store of home.
func NewStore(home string) *Store { return &Store{Home: home} }

// Dir is where the bases are.
func (s *Store) Dir() string { return filepath.Join(s.Home, "bases") }

// isHex reports whether s is the 64 hex digits of a sha256 digest (a
// function, not a regular expression: this package is initialised on the
// sandbox commands' fast path, before any regexp).
func isHex(s string) bool {
	return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == ""
}

// List returns the stored bases, newest first.
func (s *Store) List() ([]*Base, error) {
	ents, err := os.ReadDir(s.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list bases: %w", err)
	}
	var out []*Base
	for _, e := range ents {
		if !e.IsDir() || !isHex(e.Name()) {
			continue
		}
		b, err := read(filepath.Join(s.Dir(), e.Name()))
		if err != nil {
			continue // not a base (gc removes it)
		}
		out = append(out, b)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].CreatedAt.After(out[j].CreatedAt) })
	return out, nil
}

func read(dir string) (*Base, error) {
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		return nil, err
	}
	var b Base
	if err := json.Unmarshal(data, &b); err != nil {
		return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, FileName), err)
	}
	if "sha256:"+filepath.Base(dir) != b.Digest {
		return nil, fmt.Errorf("%s says digest %s, its directory %s", filepath.Join(dir, FileName), b.Digest, filepath.Base(dir))
	}
	b.dir = dir
	return &b, nil
}

// Get returns the base of a digest ("sha256:<hex>"), nil when absent.
func (s *Store) Get(digest string) *Base {
	h := strings.TrimPrefix(digest, "sha256:")
	if !isHex(h) {
		return nil
	}
	b, err := read(filepath.Join(s.Dir(), h))
	if err != nil {
		return nil
	}
	return b
}

// Resolve finds the base arg names: its digest, with or without sha256:,
// or a prefix of at least 4 hex digits that only one base has.
func (s *Store) Resolve(arg string) (*Base, error) {
	h := strings.TrimPrefix(strings.ToLower(arg), "sha256:")
	if len(h) < 4 || strings.Trim(h, "0123456789abcdef") != "" {
		return nil, errkind.Errorf(errkind.Usage, "%q does not name a base: give its digest (sha256:...) or at least 4 of its first hex digits (cwm base ls lists them)", arg)
	}
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	var found []*Base
	for _, b := range all {
		if strings.HasPrefix(strings.TrimPrefix(b.Digest, "sha256:"), h) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 0:
		return nil, errkind.Errorf(errkind.NotFound, "no base %s in %s (cwm base ls lists them; cwm base import or cwm base build makes one)", arg, s.Dir())
	case 1:
		return found[0], nil
	}
	return nil, errkind.Errorf(errkind.Usage, "%s names %d bases (%s, %s, ...): give more of the digest", arg, len(found), found[0].Short(), found[1].Short())
}

// Stage is a base being made: a hidden directory of the store, locked
// while its maker runs, with rootfs/ to fill.
type Stage struct {
	dir  string
	lock *os.File
}

// NewStage makes a stage in the store.
func (s *Store) NewStage() (*Stage, error) {
	if err := os.MkdirAll(s.Dir(), 0o755); err != nil {
		return nil, fmt.Errorf("make the base store: %w", err)
	}
	dir, err := os.MkdirTemp(s.Dir(), ".stage-")
	if err != nil {
		return nil, fmt.Errorf("make a stage for a base: %w", err)
	}
	os.Chmod(dir, 0o755)
	f, err := os.Open(dir)
	if err == nil {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
	}
	if err == nil {
		err = os.Mkdir(filepath.Join(dir, "rootfs"), 0o755)
	}
	if err != nil {
		if f != nil {
			f.Close()
		}
		sandbox.RemoveAll(dir)
		return nil, fmt.Errorf("make a stage for a base: %w", err)
	}
	return &Stage{dir: dir, lock: f}, nil
}

// Rootfs is the root filesystem being made.
func (st *Stage) Rootfs() string { return filepath.Join(st.dir, "rootfs") }

// Dir is the stage's directory (scratch files beside rootfs/ go there).
func (st *Stage) Dir() string { return st.dir }

// Discard removes the stage (an import that failed).
func (st *Stage) Discard() {
	sandbox.RemoveAll(st.dir)
	st.lock.Close()
}

// Publish writes b's base.json into the stage and renames the stage to
// the base's directory. When the store has the base already (the same
// image imported twice, at once or not), the stage goes and the stored
// one is returned.
func (s *Store) Publish(st *Stage, b *Base) (*Base, error) {
	defer st.lock.Close()
	if b.CreatedAt.IsZero() {
		b.CreatedAt = time.Now().UTC().Truncate(time.Second)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		st.Discard()
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(st.dir, FileName), append(data, '\n'), 0o644); err != nil {
		st.Discard()
		return nil, fmt.Errorf("write %s: %w", FileName, err)
	}
	dir := filepath.Join(s.Dir(), strings.TrimPrefix(b.Digest, "sha256:"))
	if err := os.Rename(st.dir, dir); err != nil {
		st.Discard()
		if old := s.Get(b.Digest); old != nil {
			return old, nil
		}
		return nil, fmt.Errorf("publish base %s: %w", b.Short(), err)
	}
	b.dir = dir
	return b, nil
}

// Remove takes b out of the store: renamed out of sight first, so that
// no half-removed base is ever listed, then deleted.
func (s *Store) Remove(b *Base) error {
	gone := filepath.Join(s.Dir(), fmt.Sprintf(".rm-%s-%d", b.Short(), time.Now().UnixNano()))
	if err := os.Rename(b.dir, gone); err != nil {
		return fmt.Errorf("remove base %s: %w", b.Short(), err)
	}
	if err := sandbox.RemoveAll(gone); err != nil {
		return fmt.Errorf("remove base %s: %w", b.Short(), err)
	}
	return nil
}

// GC removes what interrupted imports and removals left: stages no
// import holds any more, half-removed bases, directories without a valid
// base.json. It returns what it removed.
func (s *Store) GC() ([]string, error) {
	ents, err := os.ReadDir(s.Dir())
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var removed []string
	var first error
	for _, e := range ents {
		p := filepath.Join(s.Dir(), e.Name())
		switch {
		case strings.HasPrefix(e.Name(), ".stage-"):
			if held(p) {
				continue // an import under way
			}
		case strings.HasPrefix(e.Name(), ".rm-"):
		case isHex(e.Name()):
			if _, err := read(p); err == nil {
				continue
			}
		default:
			continue
		}
		if err := sandbox.RemoveAll(p); err != nil && first == nil {
			first = fmt.Errorf("remove %s: %w", p, err)
			continue
		}
		removed = append(removed, p)
	}
	return removed, first
}

// held reports whether an import holds the stage's lock.
func held(dir string) bool {
	f, err := os.Open(dir)
	if err != nil {
		return false
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		return errors.Is(err, unix.EWOULDBLOCK)
	}
	return false
}

// Blobs are the digests of the blobs the stored bases keep in the blob
// cache (manifest, configuration, layers): what a prune of the cache
// keeps.
func (s *Store) Blobs() (map[string]bool, error) {
	all, err := s.List()
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{}
	for _, b := range all {
		keep[b.Digest] = true
		keep[b.Config] = true
		for _, l := range b.Layers {
			keep[l.Digest] = true
		}
	}
	return keep, nil
}
