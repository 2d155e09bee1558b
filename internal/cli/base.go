package cli

import (
	"fmt"
	"path/filepath"

	"cwm/internal/base"
	"cwm/internal/basebuild"
	"cwm/internal/command"
	"cwm/internal/env"
	"cwm/internal/sandbox"
)

// baseOptions are the options of an import or a build: a sandbox runtime
// to find the base's Python with, which the caller closes.
func baseOptions(e *command.Env) (basebuild.Options, func(), error) {
	rt, err := sandbox.NewRuntime(sandbox.Options{Home: e.Home, Log: e.Log, Warm: -1})
	if err != nil {
		return basebuild.Options{}, nil, fmt.Errorf("start sandbox runtime: %w", err)
	}
	return basebuild.Options{Runtime: rt}, func() { rt.Close() }, nil
}

// baseUsers maps a base's digest to the environments of the store that
// name it: by digest, or by its root filesystem's directory (a grant of
// --base DIR naming the store's copy).
func baseUsers(home string, bases []*base.Base) (map[string][]string, error) {
	envs, err := env.NewStore(home).List()
	if err != nil {
		return nil, err
	}
	users := map[string][]string{}
	for _, en := range envs {
		names := []string{en.Base}
		if o := en.Origin(); o != nil {
			names = append(names, o.Base)
		}
		for _, b := range bases {
			for _, n := range names {
				if n == b.Digest || (n != "" && filepath.Clean(n) == b.Rootfs()) {
					users[b.Digest] = append(users[b.Digest], en.ID)
					break
				}
			}
		}
	}
	return users, nil
}

// printBase prints what an import or a build stored.
func printBase(e *command.Env, b *base.Base) {
	py := "no Python"
	if b.Py != nil {
		py = "Python " + b.Py.Version
	}
	fmt.Fprintf(e.Stdout, "%s\n", b.Digest)
	fmt.Fprintf(e.Stderr, "base %s: %s, %s, %d layer(s), %s unpacked\n", b.Short(), b.Describe(), py, len(b.Layers), humanBytes(b.Bytes))
}
