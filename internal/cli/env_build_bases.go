package cli

import (
	"context"
	"fmt"
	"os"

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
		bases = append(bases, envbuild.BasePython{Ref: b.Short() + " " + b.Describe(), Python: py.Version, Root: b.Digest})
	}
	return "", bases, nil
}
