package envbuild

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"cwm/internal/sandbox"
)

// layerRoots are the top-level directories an environment's layer keeps
// from what its install wrote. The rest (/tmp, /root/.cache, pip's build
// directories) is scratch.
var layerRoots = []string{"repo", "venv"}

// mergeUpper applies a snapshot of a sandbox's upper layer to the layer
// directory: files and directories are copied over, whiteouts delete what
// they hide, opaque directories replace their counterpart. keep, when set,
// selects which paths (relative to upper) are taken.
func mergeUpper(upper, layer string, keep func(rel string) bool) error {
	for _, root := range layerRoots {
		src := filepath.Join(upper, root)
		if _, err := os.Lstat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(upper, p)
			if keep != nil && !d.IsDir() && !keep(rel) {
				return nil
			}
			dst := filepath.Join(layer, rel)
			var st unix.Stat_t
			if err := unix.Lstat(p, &st); err != nil {
				return err
			}
			switch st.Mode & unix.S_IFMT {
			case unix.S_IFCHR:
				if st.Rdev == 0 { // a whiteout: the path was deleted
					return sandbox.RemoveAll(dst)
				}
				return nil
			case unix.S_IFDIR:
				if sandbox.IsOpaque(p) && rel != root {
					if err := sandbox.RemoveAll(dst); err != nil {
						return err
					}
				}
				if fi, err := os.Lstat(dst); err == nil && !fi.IsDir() {
					os.Remove(dst)
				}
				if err := os.MkdirAll(dst, 0o755); err != nil {
					return err
				}
				return os.Chmod(dst, os.FileMode(st.Mode&0o7777))
			case unix.S_IFLNK:
				link, err := os.Readlink(p)
				if err != nil {
					return err
				}
				sandbox.RemoveAll(dst)
				return os.Symlink(link, dst)
			case unix.S_IFREG:
				sandbox.RemoveAll(dst)
				if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
					return err
				}
				// A rename would be cheaper, but the snapshot may be on
				// another file system than the store.
				if err := sandbox.CopyFile(p, dst, os.FileMode(st.Mode&0o7777)); err != nil {
					return err
				}
				// With its times: Python's bytecode caches name their
				// source by its mtime, and a layer whose sources are newer
				// than their caches compiles the venv again in every run
				// (and fails suites that make warnings errors on a
				// library's old escapes).
				return unix.UtimesNano(dst, []unix.Timespec{st.Atim, st.Mtim})
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("merge %s into the layer: %w", root, err)
		}
	}
	return nil
}

// isBytecode selects compiled Python files, the only thing the warm-up
// run may add to a layer.
func isBytecode(rel string) bool {
	return strings.Contains(rel, "/__pycache__/") && strings.HasSuffix(rel, ".pyc")
}

// gitExcludes are added to the layer repository's .git/info/exclude, so
// that what installing and running leaves behind does not show in git
// status: later stages diff the work tree against the commit.
const gitExcludes = `
# cwm: build and run artefacts of the environment
__pycache__/
*.py[cod]
*.egg-info/
.pytest_cache/
.eggs/
`

func addGitExcludes(repo string) error {
	p := filepath.Join(repo, ".git", "info", "exclude")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(p, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(gitExcludes); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
