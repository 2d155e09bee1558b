package env

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"cwm/internal/hostexec"
	"cwm/internal/sandbox"
)

// DeriveSpec says what a derived environment adds to its parent.
type DeriveSpec struct {
	// Key distinguishes it among its parent's derived environments (an
	// instance's id and base_commit): with the parent's id it makes the
	// id, so the same derivation is found again instead of redone.
	Key string
	// Name, Commit and Tree are the derived environment's: its repository
	// is at Commit (whose tree is Tree).
	Name, Commit, Tree string
	// Install are the steps that made the upper layer, recorded after
	// the parent's.
	Install []Step
}

// DerivedID is the id of the environment Derive makes from parent with
// key.
func DerivedID(parent *Env, key string) string {
	h := sha256.Sum256([]byte("derived\x00" + parent.ID + "\x00" + key))
	return hex.EncodeToString(h[:8])
}

// Derive stores the environment made of parent with the layer directory
// upper (a sandbox's Snapshot) laid over its layer: one layer, so that it
// opens, pushes and pulls like any environment. The parent's layer is
// hard-linked, not copied, where the filesystem allows (what upper
// replaces is unlinked first, never written through), so a derivation
// costs about what upper holds and a walk of the parent's tree. The
// manifest is the parent's with spec's repository state and steps, and
// no baseline or coverage map of its own (the parent's were taken at
// another commit); the origin, and with it the grant, is the parent's.
// An environment already stored under the id is returned as it is.
func (st *Store) Derive(ctx context.Context, parent *Env, upper string, spec DeriveSpec) (*Env, error) {
	id := DerivedID(parent, spec.Key)
	if e := st.Get(id); e != nil && e.Usable {
		return e, nil
	}
	s, err := st.NewStage()
	if err != nil {
		return nil, fmt.Errorf("derive an environment from %s: %w", parent.ID, err)
	}
	fail := func(err error) (*Env, error) {
		s.Discard()
		return nil, fmt.Errorf("derive an environment from %s: %w", parent.ID, err)
	}
	if err := linkTree(ctx, parent.LayerDir(), s.LayerDir()); err != nil {
		return fail(err)
	}
	if err := sandbox.ApplyLayer(upper, s.LayerDir()); err != nil {
		return fail(err)
	}
	m := *parent
	m.ID, m.Name, m.Commit, m.Revision, m.Tree = id, spec.Name, spec.Commit, spec.Commit, spec.Tree
	m.Install = append(append([]Step(nil), parent.Install...), spec.Install...)
	m.Baseline, m.Coverage, m.Runs, m.Counts = []TestResult{}, nil, nil, Counts{}
	m.BuiltAt = time.Now().UTC()
	o := Origin{At: m.BuiltAt}
	if p := parent.Origin(); p != nil {
		o = *p
	}
	s.Adopt(m, o)
	if err := s.Publish(true); err != nil {
		return fail(err)
	}
	return s.Env(), nil
}

// linkTree makes dst a copy of the tree src whose files are hard links to
// src's (directories, with their owners, modes and extended attributes,
// are new), or a plain copy where links cannot be made (another
// filesystem).
func linkTree(ctx context.Context, src, dst string) error {
	if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"cp", "-a", "-l", "--", src, dst}, Timeout: 30 * time.Minute}); err == nil {
		return nil
	}
	sandbox.RemoveAll(dst)
	if _, err := hostexec.Output(ctx, hostexec.Cmd{Args: []string{"cp", "-a", "--", src, dst}, Timeout: 30 * time.Minute}); err != nil {
		os.RemoveAll(dst)
		return fmt.Errorf("copy the parent's layer: %w", err)
	}
	return nil
}
