package envbuild

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"cwm/internal/env"
	"cwm/internal/errkind"
	"cwm/internal/sandbox"
)

// sourceInfo is what fetching a source found.
type sourceInfo struct {
	Revision string // commit for git, tree hash for a plain directory
	Tree     string // git tree hash of the checked-out content
	Commit   string // the commit in the layer's repository
	// Date is the commit's committer date (git sources; zero for a plain
	// directory, whose commit date is fixed).
	Date time.Time
	// Note says what of the source could not be copied, for the build's
	// output: "" when all was.
	Note string
}

// inputErrorf is a problem with what the user asked for (a path that does
// not exist, a revision that is not there), an error of kind
// errkind.Input: the CLI prints it as it is.
func inputErrorf(format string, args ...any) error {
	return errkind.Errorf(errkind.Input, format, args...)
}

// isURL reports whether a source looks like a git URL rather than a path.
func isURL(s string) bool {
	if strings.Contains(s, "://") {
		return true
	}
	// scp-like syntax: git@host:path (but not C:\ or ./a:b).
	at := strings.IndexByte(s, '@')
	colon := strings.IndexByte(s, ':')
	return at > 0 && colon > at && !strings.ContainsAny(s[:at], "/")
}

// ResolveSource decides what kind of source s is. A path must be a
// directory; it is a git source when it is the top of a git work tree
// (or a bare repository).
func ResolveSource(ctx context.Context, s string) (env.Source, error) {
	if s == "" {
		return env.Source{}, inputErrorf("no repository given")
	}
	if isURL(s) {
		return env.Source{Kind: "git", Location: s}, nil
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return env.Source{}, inputErrorf("repository %s: %v", s, err)
	}
	st, err := os.Stat(abs)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return env.Source{}, inputErrorf("repository %s: no such directory", s)
		}
		return env.Source{}, inputErrorf("repository %s: %v", s, err)
	}
	if !st.IsDir() {
		return env.Source{}, inputErrorf("repository %s: not a directory", s)
	}
	// A subdirectory of some other repository (like examples/textkit in
	// cwm's own tree) is a plain directory: only a repository's top counts.
	top, err := git(ctx, abs, nil, "rev-parse", "--show-toplevel")
	if err == nil && filepath.Clean(strings.TrimSpace(top)) == abs {
		return env.Source{Kind: "git", Location: abs}, nil
	}
	if bare, err := git(ctx, abs, nil, "rev-parse", "--is-bare-repository"); err == nil && strings.TrimSpace(bare) == "true" {
		return env.Source{Kind: "git", Location: abs}, nil
	}
	return env.Source{Kind: "dir", Location: abs}, nil
}

// gitEnv makes git ignore the user's and the system's configuration and
// never prompt, so that what ends up in a layer depends only on the source.
var gitEnv = []string{
	"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "GIT_TERMINAL_PROMPT=0",
	"GIT_AUTHOR_NAME=cwm", "GIT_AUTHOR_EMAIL=cwm@localhost",
	"GIT_COMMITTER_NAME=cwm", "GIT_COMMITTER_EMAIL=cwm@localhost",
	"LANG=C", "LC_ALL=C",
}

// git runs git on the host in dir. Only cwm's own repositories and the
// user's source are touched, never code from the repository.
func git(ctx context.Context, dir string, vars []string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	base := []string{"-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false",
		"-c", "init.defaultBranch=main", "-c", "advice.detachedHead=false", "-c", "safe.directory=*"}
	cmd := exec.CommandContext(ctx, "git", append(base, args...)...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), gitEnv...), vars...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(errb.String())
		if msg == "" {
			msg = err.Error()
		}
		return out.String(), fmt.Errorf("git %s: %s", strings.Join(args, " "), msg)
	}
	return out.String(), nil
}

// fetchSource puts the repository at rev into dst (which must not exist):
// a checkout on a branch named main in a shallow repository that holds rev
// back to its nearest version tag, with that tag (setuptools_scm and
// hatch-vcs make the version from it and the distance; without it a
// project is 0.1.dev and fails its own minimum-version checks), and
// nothing after rev (no remotes, no other refs, no reflog). The rest of
// the history stays with the source (env.OpenHistory); the source's root
// commits, which decontamination compares, are kept in .git/cwm-roots.
func fetchSource(ctx context.Context, src env.Source, rev, dst, scratch string) (sourceInfo, error) {
	if src.Kind == "dir" {
		if rev != "" {
			return sourceInfo{}, inputErrorf("--rev %s: %s is a plain directory, not a git repository", rev, src.Location)
		}
		return snapshotDir(ctx, src.Location, dst)
	}
	from := src.Location
	if isURL(from) {
		// Fetching by commit from a remote needs server support; a bare
		// clone makes every source local.
		clone := filepath.Join(scratch, "clone.git")
		if _, err := git(ctx, scratch, nil, "clone", "--quiet", "--bare", from, clone); err != nil {
			return sourceInfo{}, inputErrorf("repository %s: %v", from, err)
		}
		from = clone
	}
	if rev == "" {
		rev = "HEAD"
	}
	commit, err := git(ctx, from, nil, "rev-parse", "--verify", "--quiet", rev+"^{commit}")
	if err != nil {
		return sourceInfo{}, inputErrorf("--rev %s: no such revision in %s", rev, src.Location)
	}
	commit = strings.TrimSpace(commit)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		return sourceInfo{}, err
	}
	depth, tag := nearestTag(ctx, from, commit)
	var note string
	if _, err := git(ctx, dst, nil, "init", "--quiet"); err != nil {
		return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err)
	}
	if _, err := git(ctx, dst, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--depth", strconv.Itoa(depth), from, commit); err != nil {
		if depth == 1 {
			return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err)
		}
		// A source whose history lacks objects (a partial clone, a
		// damaged mirror) cannot give the commits down to the tag, while
		// the commit's own tree may be whole: the layer keeps that, and
		// says what it lost.
		if err := sandbox.RemoveAll(filepath.Join(dst, ".git")); err != nil {
			return sourceInfo{}, fmt.Errorf("copy %s at %s: start again: %w", src.Location, rev, err)
		}
		if _, err1 := git(ctx, dst, nil, "init", "--quiet"); err1 != nil {
			return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err1)
		}
		if _, err1 := git(ctx, dst, nil, "fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--depth", "1", from, commit); err1 != nil {
			return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err)
		}
		cause := strings.SplitN(err.Error(), "\n", 2)[0]
		if i := strings.Index(cause, commit+": "); i >= 0 {
			cause = cause[i+len(commit)+2:]
		}
		note = fmt.Sprintf("the source's history down to tag %s (%d commits) could not be copied (%s): the layer holds the commit alone, without its version tag",
			tag, depth-1, strings.TrimSpace(cause))
		tag = ""
	}
	var steps [][]string
	if tag != "" {
		// The tag's commit is fetched already; depth 1 adds no ancestor
		// of its own (one fetch would reach depth commits from each ref).
		steps = append(steps, []string{"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", "--depth", "1", from, "refs/tags/" + tag + ":refs/tags/" + tag})
	}
	roots, err := git(ctx, from, nil, "rev-list", "--max-parents=0", commit)
	if err != nil {
		return sourceInfo{}, fmt.Errorf("root commits of %s at %s: %w", src.Location, rev, err)
	}
	steps = append(steps,
		[]string{"checkout", "--quiet", "-b", "main", commit},
		[]string{"reflog", "expire", "--expire=now", "--all"},
		[]string{"gc", "--quiet", "--prune=now"},
	)
	for _, args := range steps {
		if _, err := git(ctx, dst, nil, args...); err != nil {
			return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dst, ".git", "cwm-roots"), []byte(roots), 0o644); err != nil {
		return sourceInfo{}, fmt.Errorf("copy %s at %s: %w", src.Location, rev, err)
	}
	tree, err := git(ctx, dst, nil, "rev-parse", "HEAD^{tree}")
	if err != nil {
		return sourceInfo{}, err
	}
	date, err := git(ctx, dst, nil, "show", "-s", "--format=%cI", "HEAD")
	if err != nil {
		return sourceInfo{}, err
	}
	when, err := time.Parse(time.RFC3339, strings.TrimSpace(date))
	if err != nil {
		return sourceInfo{}, fmt.Errorf("date of %s at %s: %w", src.Location, rev, err)
	}
	return sourceInfo{Revision: commit, Tree: strings.TrimSpace(tree), Commit: commit, Date: when, Note: note}, nil
}

// skipDirs are never copied from a plain directory: version control,
// caches and virtual environments of the user's own machine.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, "__pycache__": true, ".pytest_cache": true,
	".mypy_cache": true, ".ruff_cache": true, ".tox": true, ".nox": true, ".venv": true,
	"venv": true, ".eggs": true, "node_modules": true,
}

// snapshotDir copies a plain directory into dst and commits it as the one
// commit of a new repository, with a fixed author and date, so the same
// content always gives the same commit. Files the tree's .gitignore
// ignores are removed from the copy: the layer is exactly the commit.
func snapshotDir(ctx context.Context, from, dst string) (sourceInfo, error) {
	if err := copyPlainTree(from, dst); err != nil {
		return sourceInfo{}, fmt.Errorf("copy %s: %w", from, err)
	}
	date := []string{"GIT_AUTHOR_DATE=2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2000-01-01T00:00:00Z"}
	steps := [][]string{
		{"init", "--quiet"},
		{"add", "--all"},
		{"commit", "--quiet", "--allow-empty", "-m", "snapshot"},
		{"clean", "--quiet", "-d", "-f", "-X"},
	}
	for _, args := range steps {
		if _, err := git(ctx, dst, date, args...); err != nil {
			return sourceInfo{}, fmt.Errorf("snapshot %s: %w", from, err)
		}
	}
	out, err := git(ctx, dst, nil, "rev-parse", "HEAD", "HEAD^{tree}")
	if err != nil {
		return sourceInfo{}, err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return sourceInfo{}, fmt.Errorf("snapshot %s: unexpected rev-parse output %q", from, out)
	}
	return sourceInfo{Revision: f[1], Tree: f[1], Commit: f[0]}, nil
}

// copyPlainTree copies regular files, directories and symlinks with their
// permission bits; special files are skipped.
func copyPlainTree(from, dst string) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() && rel != "." && skipDirs[d.Name()] {
			return filepath.SkipDir
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case d.IsDir():
			return os.MkdirAll(target, info.Mode().Perm()|0o700)
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		case d.Type().IsRegular():
			if strings.HasSuffix(d.Name(), ".pyc") {
				return nil
			}
			return sandbox.CopyFile(p, target, info.Mode().Perm())
		}
		return nil
	})
}

// maxTagDepth bounds the commits a layer keeps to reach its nearest tag:
// farther, the version tag is left out (the project versions as 0.1.dev).
const maxTagDepth = 1000

// nearestTag is the version tag setuptools_scm would describe commit from
// (git describe --tags --match '*[0-9]*') and the depth that reaches it
// (its distance plus one); depth 1 and no tag when there is none near.
func nearestTag(ctx context.Context, repo, commit string) (depth int, tag string) {
	out, err := git(ctx, repo, nil, "describe", "--tags", "--long", "--match", "*[0-9]*", commit)
	if err != nil {
		return 1, ""
	}
	// TAG-DISTANCE-gHASH; the tag itself may hold dashes.
	parts := strings.Split(strings.TrimSpace(out), "-")
	if len(parts) < 3 {
		return 1, ""
	}
	n, err := strconv.Atoi(parts[len(parts)-2])
	if err != nil || n+1 > maxTagDepth {
		return 1, ""
	}
	return n + 1, strings.Join(parts[:len(parts)-2], "-")
}
