package basebuild

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"cwm/internal/base"
	"cwm/internal/sandbox"
)

var versionRE = regexp.MustCompile(`^3\.[0-9]+\.[0-9]+`)

// findPython looks for python3 on the base's PATH and asks it its version,
// in a sandbox on rootfs: what a build on the base will run, as it will
// run it (its loader, its libraries), never the host's. No python3 on the
// PATH is nil, not an error; one that is there and does not run is an
// error.
func findPython(ctx context.Context, rt *sandbox.Runtime, rootfs string, env []string) (*base.Python, error) {
	sb, err := rt.New(ctx, sandbox.Config{Base: rootfs, Env: env, Limits: sandbox.Limits{Timeout: time.Minute}})
	if err != nil {
		return nil, fmt.Errorf("start a sandbox on the base to find its Python: %w", err)
	}
	defer sb.Close()
	pathVar := "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	for _, kv := range env {
		if p, ok := strings.CutPrefix(kv, "PATH="); ok {
			pathVar = p
		}
	}
	var found string
	for _, dir := range strings.Split(pathVar, ":") {
		if !path.IsAbs(dir) {
			continue
		}
		fi, err := sb.Stat(ctx, path.Join(dir, "python3"))
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.IsDir) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look for python3 in the base: %w", err)
		}
		found = path.Join(dir, "python3")
		break
	}
	if found == "" {
		return nil, nil
	}
	res, err := sb.Exec(ctx, sandbox.Cmd{Args: []string{found, "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"}})
	if err != nil {
		return nil, fmt.Errorf("run %s in the base: %w", found, err)
	}
	out := strings.TrimSpace(string(res.Stdout))
	if !res.Success() || !versionRE.MatchString(out) {
		return nil, fmt.Errorf("%s in the base does not run (exit %d): %s", found, res.ExitCode, strings.TrimSpace(string(res.Stderr)+" "+out))
	}
	return &base.Python{Path: found, Version: out}, nil
}
