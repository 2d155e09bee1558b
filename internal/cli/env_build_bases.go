package cli

import (
	"fmt"
	"os"

	"cwm/internal/base"
	"cwm/internal/envbuild"
)

// buildBases resolves env build's --base and lists the stored bases a
// build may choose for the Python its project needs. A --base that is a
// directory stays a directory; anything else names a stored base (its
// digest or a prefix of it), which must have a Python.
func buildBases(home, arg string) (string, []envbuild.BasePython, error) {
	st := base.NewStore(home)
	if arg != "" {
		if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
			return arg, nil, nil
		}
		b, err := st.Resolve(arg)
		if err != nil {
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
