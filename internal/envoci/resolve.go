package envoci

import (
	"context"
	"os"
	"strings"

	"cwm/internal/env"
	"cwm/internal/errkind"
)

// Resolve finds the environment ref names, wherever it is: an existing
// file is one cwm env export wrote (imported on first use), a reference
// with a slash is in a registry (pulled on first use), anything else is
// in the store (an id, a unique id prefix or a name); a name ending in
// .tar that is not a file is a missing file. It is what every
// command taking an environment calls; pulled, when set, hears of a pull
// or an import that moved something.
func Resolve(ctx context.Context, st *env.Store, ref string, o Options, pulled func(what string, seconds float64)) (*env.Env, error) {
	if fi, err := os.Stat(ref); err == nil && fi.Mode().IsRegular() {
		res, err := ImportWith(st, ref, o)
		if err != nil {
			return nil, err
		}
		if len(res.Envs) != 1 {
			return nil, errkind.Errorf(errkind.Input, "%s holds %d environments: import it with cwm env import and name one", ref, len(res.Envs))
		}
		if pulled != nil && res.Present == 0 {
			pulled("imported "+res.IDs[0]+" from "+ref, res.Seconds)
		}
		return res.Envs[0], nil
	}
	if strings.HasSuffix(ref, ".tar") {
		// Meant as an exported file, which is not there.
		return nil, errkind.Errorf(errkind.NotFound, "no exported environment %s", ref)
	}
	if LooksLikeReference(ref) {
		res, err := Pull(ctx, st, ref, o)
		if err != nil {
			return nil, err
		}
		if pulled != nil && !res.Present {
			pulled("pulled "+res.EnvID+" from "+ref, res.Seconds)
		}
		return res.Env, nil
	}
	return st.Resolve(ref)
}
