package cli

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/command"
	"cwm/internal/envbuild"
)

// buildBases resolves env build's --base and lists the stored bases a
// build may choose for the Python its project needs. A --base that is a
// directory is imported into the base store (basebuild.ImportDir: packed
// into one layer, by digest), so that the environment names a base that
// travels with it, not a path of this machine; anything else names a
// stored base (its digest or a prefix of it). Either must have a Python.
func buildBases(ctx context.Context, e *command.Env, arg string) (string, []envbuild.BasePython, error) {
	st := base.NewStore(e.Home)
	if arg != "" {
		var b *base.Base
		if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
			o, done, err := baseOptions(e)
			if err != nil {
				return "", nil, err
			}
			defer done()
			if b, err = basebuild.ImportDir(ctx, st, arg, o); err != nil {
				return "", nil, fmt.Errorf("--base %s: import the directory as a base: %w", arg, err)
			}
			fmt.Fprintf(e.Stderr, "base: imported %s as %s\n", arg, b.Short())
		} else if b, err = st.Resolve(arg); err != nil {
			return "", nil, fmt.Errorf("--base %s: %w", arg, err)
		}
		if _, err := b.Python(); err != nil {
			return "", nil, fmt.Errorf("--base %s: %w", arg, err)
		}
		return b.Digest, nil, nil
	}
	all, err := st.List()
	if err != nil {
		return "", nil, err
	}
	var bases []envbuild.BasePython
	for _, b := range all {
		py, err := b.Python()
		if err != nil {
			continue // a base without Python builds nothing
		}
		bases = append(bases, basePython(b, py.Version))
	}
	return "", bases, nil
}

func basePython(b *base.Base, python string) envbuild.BasePython {
	return envbuild.BasePython{Ref: b.Short() + " " + b.Describe(), Python: python, Root: b.Digest, Packages: b.Source.Packages}
}

// deriveBase gives envbuild a base like a stored Debian base with more
// Debian packages (envbuild.Options.DeriveBase): the store's base of the
// same suite and mirror with exactly those packages when there is one,
// else one built now (basebuild.BuildDebian: --packages the base's and
// the new ones). A base not built from Debian has no derivation.
func deriveBase(e *command.Env) func(context.Context, envbuild.BasePython, []string) (*envbuild.BasePython, error) {
	return func(ctx context.Context, from envbuild.BasePython, add []string) (*envbuild.BasePython, error) {
		st := base.NewStore(e.Home)
		parent, err := st.Resolve(from.Root)
		if err != nil {
			return nil, err
		}
		if parent.Source.Kind != base.KindDebian {
			return nil, fmt.Errorf("base %s (%s) was not built from Debian: build one with the packages (cwm base build --debian SUITE --packages %s) and give it with --base",
				parent.Short(), parent.Describe(), strings.Join(add, ","))
		}
		want := append(slices.Clone(parent.Source.Packages), add...)
		all, err := st.List()
		if err != nil {
			return nil, err
		}
		withPython := func(b *base.Base) (*envbuild.BasePython, error) {
			py, err := b.Python()
			if err != nil {
				return nil, err
			}
			bp := basePython(b, py.Version)
			return &bp, nil
		}
		for _, b := range all {
			s := b.Source
			if s.Kind == base.KindDebian && s.Suite == parent.Source.Suite && s.Ref == parent.Source.Ref && sameSet(s.Packages, want) {
				if bp, err := withPython(b); err == nil {
					return bp, nil
				}
			}
		}
		o, done, err := baseOptions(e)
		if err != nil {
			return nil, err
		}
		defer done()
		b, err := basebuild.BuildDebian(ctx, st, basebuild.Debian{Suite: parent.Source.Suite, Packages: want, Mirror: parent.Source.Ref}, o)
		if err != nil {
			return nil, err
		}
		return withPython(b)
	}
}

// sameSet says whether a and b hold the same strings.
func sameSet(a, b []string) bool {
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(slices.Compact(x), slices.Compact(y))
}
